"""What the SSH-CLI switch drivers share: running a command, judging its answer, parsing it."""
