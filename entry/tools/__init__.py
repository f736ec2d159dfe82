"""The tools around trained runs: load and act (agent), evaluate and record demonstrations (application), find
registered names and configs (discover), draw learning curves (plot)."""
