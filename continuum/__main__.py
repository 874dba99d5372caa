from continuum.cli import main

raise SystemExit(main())
