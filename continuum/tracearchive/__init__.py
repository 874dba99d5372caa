"""The trace archive: named, checked, described, convertible and recordable
cellular traces (see trace-archive/README.md).

- `mahimahi`: reading and writing Mahimahi traces, rates to opportunities;
- `checks`: Mahimahi's rules plus ours, each finding with file and line;
- `stats`: capacity per second, outages, summary numbers;
- `convert`: public dataset formats to Mahimahi traces;
- `synth`: the project's own generated traces and their recipes;
- `index`: the entries (one TOML file each) and name lookup;
- `fetch`: external datasets, downloaded or from a mirror, checksummed;
- `plot`: capacity over time, CDF, outages;
- `record`: the saturatr-style recorder;
- `cli`: `continuum traces ...`.
"""
