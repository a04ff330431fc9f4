# Writes OUT as a header defining IOPULSE_REVISION (the git revision of SRC, or
# "unknown" outside a checkout), touching it only when the revision changed so
# that an unchanged tree rebuilds nothing. Run at every build, not at configure
# time, so `iopulse version` and iopulse_build_info never report a stale one.
execute_process(COMMAND git rev-parse --short=12 HEAD
	WORKING_DIRECTORY ${SRC}
	OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE
	ERROR_QUIET)
if(NOT rev)
	set(rev "unknown")
endif()
file(WRITE ${OUT}.tmp "#define IOPULSE_REVISION \"${rev}\"\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
