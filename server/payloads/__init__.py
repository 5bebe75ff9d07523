"""Large payloads outside Temporal: where they are stored, and sweeping what Temporal forgot."""
