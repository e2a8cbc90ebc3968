//! The typed rows the runner works on, read from and written to the
//! store's text rows.

use alloy::primitives::Address;

use super::{
    CloseReason, DecisionKind, Outcome, PauseReason, Phase, RunState, Stakes, UnknownWord,
};
use crate::store::{DecisionOutcome, DecisionRow, RunRow, SubtaskRow};

/// A stored row holds a word or a value this version cannot read.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    /// An unknown state, phase, kind or stakes word.
    #[error(transparent)]
    Word(#[from] UnknownWord),
    /// A sub-task row's executor is not an address.
    #[error("sub-task {index}: executor {text:?}")]
    Executor {
        /// The sub-task.
        index: u32,
        /// What is stored.
        text: String,
    },
    /// A queued decision's argument is not an address (`None`: it has none).
    #[error("not an address: {}", .0.as_deref().unwrap_or("(none)"))]
    DecisionAddress(Option<String>),
    /// A decision about a sub-task names none.
    #[error("decision without a sub-task")]
    DecisionIndex,
}

/// A run as the runner works with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The plan id as stored (`0x` + 64 hex).
    pub id: String,
    /// Where it stands.
    pub state: RunState,
    /// Why it waits for a person, while paused.
    pub pause: Option<PauseReason>,
    /// Why it closes or closed, once closing.
    pub close: Option<CloseReason>,
    /// Wall-clock ms since the run waits for a recovery decision.
    pub paused_at: Option<i64>,
    /// Its stakes.
    pub stakes: Stakes,
}

impl Run {
    /// The typed run of a stored row.
    pub fn from_row(row: &RunRow) -> Result<Self, RowError> {
        Ok(Self {
            id: row.id.clone(),
            state: RunState::parse(&row.state)?,
            pause: row.pause_reason.clone().map(PauseReason),
            close: row.close_reason.as_deref().map(CloseReason::parse).transpose()?,
            paused_at: row.paused_at,
            stakes: Stakes::parse(&row.stakes)?,
        })
    }
}

/// One sub-task's progress, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Plan index.
    pub idx: u32,
    /// Current attempt.
    pub attempt: u32,
    /// Current executor.
    pub executor: Address,
    /// Where it stands.
    pub phase: Phase,
    /// The current attempt's task id (decimal), once created.
    pub task_id: Option<String>,
    /// The delivered result's URI.
    pub result_uri: Option<String>,
    /// The output handed to dependants, once paid.
    pub output: Option<String>,
}

impl Progress {
    /// A sub-task not started yet.
    pub fn waiting(idx: u32, executor: Address) -> Self {
        Self {
            idx,
            attempt: 0,
            executor,
            phase: Phase::Waiting,
            task_id: None,
            result_uri: None,
            output: None,
        }
    }

    /// The typed progress of a stored row.
    pub fn from_row(row: &SubtaskRow) -> Result<Self, RowError> {
        Ok(Self {
            idx: row.idx,
            attempt: row.attempt,
            executor: row
                .executor
                .parse()
                .map_err(|_| RowError::Executor { index: row.idx, text: row.executor.clone() })?,
            phase: Phase::parse(&row.phase)?,
            task_id: row.task_id.clone(),
            result_uri: row.result_uri.clone(),
            output: row.output.clone(),
        })
    }

    /// The row to store.
    pub fn to_row(&self) -> SubtaskRow {
        SubtaskRow {
            idx: self.idx,
            attempt: self.attempt,
            executor: self.executor.to_string(),
            phase: self.phase.as_str().to_owned(),
            task_id: self.task_id.clone(),
            result_uri: self.result_uri.clone(),
            output: self.output.clone(),
        }
    }
}

/// A queued decision, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// Position in the run's decisions.
    pub seq: i64,
    /// The sub-task, when the decision is about one.
    pub index: Option<u32>,
    /// What was decided.
    pub kind: DecisionKind,
    /// The argument (reason, new executor).
    pub arg: Option<String>,
}

impl Pending {
    /// The typed decision of a stored row.
    pub fn from_row(row: &DecisionRow) -> Result<Self, RowError> {
        Ok(Self {
            seq: row.seq,
            index: row.idx,
            kind: DecisionKind::parse(&row.kind)?,
            arg: row.arg.clone(),
        })
    }
}

impl Outcome {
    /// The outcome as stored: its words, whether it worked, and a
    /// failure's error and revert.
    pub fn to_stored(&self) -> DecisionOutcome {
        let (error, revert) = match self {
            Self::Failed { error, revert } => (Some(error.clone()), revert.clone()),
            _ => (None, None),
        };
        DecisionOutcome { outcome: self.to_string(), ok: self.ok(), error, revert }
    }
}
