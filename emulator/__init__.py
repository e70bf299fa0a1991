"""A functional PTX emulator on the CPU (numpy): one kernel launch, warps of 32 lanes run
in lock-step with active masks, every access checked. See emulator/README.md."""
