from bench.estimate.run import main

raise SystemExit(main())
