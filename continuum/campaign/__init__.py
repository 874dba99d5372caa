"""Studies, not single runs: an experiment file with a [sweep] is a campaign
of points (arms x swept values x seeds), each an ordinary experiment file
and an ordinary run folder, in one campaign folder that a re-run resumes.
sweep.py turns the file into its points and checks each as a whole file;
run.py runs them; aggregate.py is the one place the spread over runs is
summarised (docs/campaigns.md)."""
