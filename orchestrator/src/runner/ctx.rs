//! What one look at a run knows of it: the run and its plan, read from the
//! store once when the look begins and kept current by the look's own
//! changes (a transition, a raised cost, a recorded choice), so no step of
//! it reads the run again.
//!
//! Only the run's own driver changes a live run (the API queues decisions
//! for it), so what the look wrote is what the store holds; a transition
//! refused because the run was not where the look thought it was reads the
//! run again.

use std::sync::{Arc, Mutex, PoisonError};

use super::{Orchestrator, RunError};
use crate::{
    plan::Plan,
    state::{Reason, Run, RunId, RunState},
};

/// A run and its plan for the span of one look at it.
#[derive(Debug)]
pub(crate) struct RunCtx {
    /// The run id.
    id: RunId,
    /// The run and its plan as they stand.
    now: Mutex<(Run, Arc<Plan>)>,
}

impl RunCtx {
    /// A context over `run` and `plan`.
    pub(crate) fn new(run: Run, plan: Plan) -> Self {
        Self { id: RunId::from(&run.id), now: Mutex::new((run, Arc::new(plan))) }
    }

    /// The run id.
    pub(crate) fn id(&self) -> &RunId {
        &self.id
    }

    /// The run as it stands.
    pub(crate) fn run(&self) -> Run {
        self.lock().0.clone()
    }

    /// Where the run stands.
    pub(crate) fn state(&self) -> RunState {
        self.lock().0.state
    }

    /// The plan as it stands (a cheap handle: a later change is not seen
    /// through it).
    pub(crate) fn plan(&self) -> Arc<Plan> {
        self.lock().1.clone()
    }

    /// Records that the plan is now `plan` (written to the store by the
    /// caller).
    pub(crate) fn set_plan(&self, plan: Plan) {
        self.lock().1 = Arc::new(plan);
    }

    /// Records that the run moved to `to` for `reason`.
    fn moved(&self, to: RunState, reason: Option<&Reason>) {
        let run = &mut self.lock().0;
        run.state = to;
        run.paused_at = (to == RunState::Paused).then(crate::store::now_ms);
        (run.pause, run.close) = match reason {
            Some(Reason::Pause(p)) => (Some(p.clone()), None),
            Some(Reason::Close(c)) => (None, Some(c.clone())),
            None => (None, None),
        };
    }

    /// Records the run as read again.
    fn reread(&self, run: Run) {
        self.lock().0 = run;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Run, Arc<Plan>)> {
        self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Orchestrator {
    /// The context of run `id`: the run and its plan, read once.
    pub(super) async fn context(&self, id: &RunId) -> Result<RunCtx, RunError> {
        let (run, plan) = self.load(id).await?;
        self.load_funding(id, plan.id).await?;
        Ok(RunCtx::new(run, plan))
    }

    /// Moves the run of `ctx` from one of `from` to `to` (see
    /// [`Orchestrator::transition`]), keeping `ctx` current; false when it
    /// was in none of them (the run is then read again).
    pub(super) async fn move_run(
        &self,
        ctx: &RunCtx,
        from: &[RunState],
        to: RunState,
        reason: Option<&Reason>,
    ) -> Result<bool, RunError> {
        if self.transition(ctx.id(), from, to, reason).await? {
            ctx.moved(to, reason);
            return Ok(true);
        }
        ctx.reread(self.load(ctx.id()).await?.0);
        Ok(false)
    }
}
