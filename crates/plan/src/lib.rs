//! `plan`: turns the factor lists a user gives into a validated set of
//! sweep points (their cartesian product) and a randomized trial schedule
//! with a recorded seed, so drift over time never biases one factor level.

pub mod factors;
pub mod parse;
pub mod schedule;

pub use factors::Factors;
pub use parse::PlanError;
pub use schedule::{Precision, Scheduler, StopRule};
