"""python -m cextend.demo"""
import sys

try:
    from cextend.demo import main
    status = main()
except KeyboardInterrupt:          # Ctrl-C while importing: one line, as main() prints
    print("cextend.demo: interrupted", file=sys.stderr)
    status = 130
raise SystemExit(status)
