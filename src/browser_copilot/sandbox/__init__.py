"""The box the model's code runs in: static vetting, the membrane, OS confinement and the network policy."""
