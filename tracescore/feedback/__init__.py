"""Human feedback on runs and what it says about the judges: calibration, review, export."""
