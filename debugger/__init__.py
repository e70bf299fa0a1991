"""The Debug Adapter Protocol server over the emulator: the only room that speaks DAP."""
