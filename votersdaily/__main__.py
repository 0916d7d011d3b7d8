from votersdaily.cli import main

raise SystemExit(main())
