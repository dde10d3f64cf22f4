from memrun.cli import main

raise SystemExit(main())
