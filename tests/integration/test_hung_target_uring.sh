#!/usr/bin/env bash
# The hung-disk scenario of test_hung_target.sh on the io_uring engine, whose
# waits can be cancelled (the sync engine's cannot).
HUNG_ENGINE=io_uring exec bash "$(dirname "$0")/test_hung_target.sh"
