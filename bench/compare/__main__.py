import sys

from bench.compare.cli import main

sys.exit(main())
