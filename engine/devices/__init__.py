"""Where code runs: targets (one backend table), boards, hardware profiles and their peaks."""
