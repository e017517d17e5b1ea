"""python -m cextend.demo"""
from cextend.demo import main

raise SystemExit(main())
