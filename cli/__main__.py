from configbags.cli import main

raise SystemExit(main())
