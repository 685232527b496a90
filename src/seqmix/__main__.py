import sys

from .pipeline.warm import try_run

# a DAG job runs in the warm worker when the Snakefile started one (seqmix.pipeline.warm), else here
_code = try_run(sys.argv[1:])
if _code is not None:
    raise SystemExit(_code)

from .cli.main import main  # noqa: E402 - only when the job runs in this process

main()
