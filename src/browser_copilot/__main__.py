"""`python -m browser_copilot`."""

from browser_copilot.cli import main

raise SystemExit(main())
