//! The errors of rendering and writing a report.

use std::path::PathBuf;

/// What can go wrong rendering or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// plotters could not draw a figure.
    #[error("drawing figure {figure:?}: {why}")]
    Draw {
        /// The figure's title.
        figure: String,
        /// plotters' message.
        why: String,
    },
    /// A data file name would not land beside the report.
    #[error("data file suffix {0:?} must be a plain file-name suffix (no '/', no '..')")]
    BadDataName(String),
    /// The output path has no file name.
    #[error("report path {0} has no file name")]
    BadOutPath(PathBuf),
    /// Writing a file failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file being written.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
