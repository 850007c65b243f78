"""Nothing left behind, nobody let in: signals end a command through its cleanup
(interrupts), temporary directories and servers private to the account and removed however
the run ends (private_temp, with the reaper watchdog and the next run's sweep)."""
