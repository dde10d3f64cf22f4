from memrun.cli import console

raise SystemExit(console())
