from mindtui.launcher import main

raise SystemExit(main())
