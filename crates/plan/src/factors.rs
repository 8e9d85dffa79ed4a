//! The factors of a sweep, each a list of levels, and their cartesian
//! product: the levels struct is generated from record's factor table
//! (and tested there, `record::factor`).

pub use record::factor::Factors;
