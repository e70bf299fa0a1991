#!/bin/sh
# ptxas, answering a second late (SLOW_PTXAS_DELAY): the window in which a check's ptxas is
# still running, made wide enough to see what is published meanwhile
# (tests/test_lsp_ptxas_carried.py). The version and ISA probes are not delayed.
case " $* " in
  *" --version "*|*ptxls-probe-*) ;;
  *) sleep "${SLOW_PTXAS_DELAY:-1}" ;;
esac
exec "$SLOW_PTXAS_REAL" "$@"
