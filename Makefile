# The README's commands, by name. Each target only calls a script.
.PHONY: demo test bench setup

setup:
	bash scripts/setup.sh

demo:
	bash scripts/demo.sh

test:
	bash scripts/test.sh

bench:
	bash bench/run.sh
