//! Experiment plans (being written).
