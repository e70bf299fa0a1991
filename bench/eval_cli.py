"""`ptxls eval ARGS` without cli/main.py's --version lookup (which imports the server, and so
pygls, absent on the GPU machine): python3 bench/eval_cli.py ARGS."""

import argparse
import sys

from ptxls.cli import eval as eval_cli

parser = argparse.ArgumentParser(prog="ptxls")
eval_cli.add_parser(parser.add_subparsers(dest="command"))
sys.exit(eval_cli.run(parser.parse_args(["eval", *sys.argv[1:]])))
