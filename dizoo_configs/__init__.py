"""Ready configs, one file per (env, policy), in DI-engine main_config/create_config form."""
