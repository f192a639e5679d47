from mindtui.cli import main

raise SystemExit(main())
