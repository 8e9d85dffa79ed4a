//! Why a trial on the user-space stack could not run.

/// What went wrong building the stack's place or running a trial on it.
#[derive(Debug, thiserror::Error)]
pub enum StackEndError {
    /// The namespace, TUN devices or addresses could not be set up.
    #[error("setting up the stack's place: {0}")]
    Setup(String),
    /// The trial asks for something the stack does not have.
    #[error("the tcplab stack cannot run this trial: {0}")]
    Unsupported(String),
    /// The kernel end failed to start or report.
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    /// The stack failed (its device, or a thread).
    #[error("the tcplab stack failed: {0}")]
    Stack(String),
    /// Ctrl-C.
    #[error("interrupted")]
    Interrupted,
}
