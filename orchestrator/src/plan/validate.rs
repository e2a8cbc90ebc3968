//! Plan validation: the shape alone, then against a [`PlanContext`] and the
//! budget.

use tessera_bindings::{capability, usdc::Usdc};

use super::{
    ExecutorStatus, MAX_ACCEPT_WINDOW_BLOCKS, MAX_CHECKPOINTS, MAX_CHOSEN_BY, MAX_CHOSEN_BY_CHARS,
    MAX_DEADLINE_SECS, MAX_REVIEW_WINDOW_SECS, MAX_SOURCE_BYTES, MAX_SPEC_BYTES, MAX_SUBTASKS,
    MIN_DEADLINE_SECS, MIN_REVIEW_WINDOW_SECS, Plan, PlanContext, PlanError, check_version,
};

impl Plan {
    /// Checks everything that needs only the plan: version, indexes `0..n`,
    /// limits, capability-name syntax, resolvable and acyclic dependencies.
    pub fn validate_shape(&self) -> Result<(), PlanError> {
        check_version(self.version)?;
        if self.subtasks.len() > MAX_SUBTASKS {
            return Err(PlanError::TooManySubtasks {
                count: self.subtasks.len(),
                max: MAX_SUBTASKS,
            });
        }
        if let Some(source) = &self.source
            && source.len() > MAX_SOURCE_BYTES
        {
            return Err(PlanError::SourceTooLarge { bytes: source.len(), max: MAX_SOURCE_BYTES });
        }
        if !(MIN_REVIEW_WINDOW_SECS..=MAX_REVIEW_WINDOW_SECS).contains(&self.review_window_secs) {
            return Err(PlanError::ReviewWindowOutOfRange {
                secs: self.review_window_secs,
                min: MIN_REVIEW_WINDOW_SECS,
                max: MAX_REVIEW_WINDOW_SECS,
            });
        }
        if self.accept_window_blocks > MAX_ACCEPT_WINDOW_BLOCKS {
            return Err(PlanError::AcceptWindowTooLong {
                blocks: self.accept_window_blocks,
                max: MAX_ACCEPT_WINDOW_BLOCKS,
            });
        }
        self.validate_nesting()?;
        let sorted = self.sorted()?;
        for task in &sorted {
            capability::encode(&task.capability)
                .map_err(|source| PlanError::InvalidCapability { index: task.index, source })?;
            if task.spec.len() > MAX_SPEC_BYTES {
                return Err(PlanError::SpecTooLarge {
                    index: task.index,
                    bytes: task.spec.len(),
                    max: MAX_SPEC_BYTES,
                });
            }
            check_chosen_by(task.index, &task.chosen_by)?;
            if let Some(when) = &task.when {
                let condition = when
                    .condition()
                    .map_err(|source| PlanError::InvalidCondition { index: task.index, source })?;
                if let Some(read) =
                    condition.references().into_iter().find(|r| !task.depends_on.contains(r))
                {
                    return Err(PlanError::ConditionReference { index: task.index, read });
                }
            }
            if !(MIN_DEADLINE_SECS..=MAX_DEADLINE_SECS).contains(&task.deadline_offset_secs) {
                return Err(PlanError::DeadlineOutOfRange {
                    index: task.index,
                    secs: task.deadline_offset_secs,
                    min: MIN_DEADLINE_SECS,
                    max: MAX_DEADLINE_SECS,
                });
            }
        }
        self.validate_checkpoints()?;
        self.validate_funding()?;
        self.topological_order().map(drop)
    }

    /// Checkpoints: at most [`MAX_CHECKPOINTS`], unique non-empty names of
    /// at most 64 bytes, each after at least one sub-task of the plan.
    fn validate_checkpoints(&self) -> Result<(), PlanError> {
        if self.checkpoints.len() > MAX_CHECKPOINTS {
            return Err(PlanError::InvalidCheckpoint {
                name: String::new(),
                problem: format!("a plan has at most {MAX_CHECKPOINTS} checkpoints"),
            });
        }
        let mut names = std::collections::BTreeSet::new();
        for cp in &self.checkpoints {
            let bad = |problem: String| PlanError::InvalidCheckpoint {
                name: cp.name.chars().take(64).collect(),
                problem,
            };
            let word = cp
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
            if cp.name.is_empty() || cp.name.len() > 64 || !word || !names.insert(cp.name.as_str())
            {
                return Err(bad("names are 1 to 64 of a-z, 0-9, `_` and `-`, and unique".into()));
            }
            if cp.after.is_empty() {
                return Err(bad("it must follow at least one sub-task".into()));
            }
            if let Some(i) = cp.after.iter().find(|i| self.subtask(**i).is_none()) {
                return Err(bad(format!("there is no sub-task {i}")));
            }
            if cp.timeout_secs.is_some_and(|t| t == 0 || t > MAX_DEADLINE_SECS) {
                return Err(bad(format!("timeout_secs runs from 1 to {MAX_DEADLINE_SECS}")));
            }
        }
        Ok(())
    }

    /// Full validation: [`Plan::validate_shape`], then capabilities and
    /// executors against `ctx`, the fields conditions read against the
    /// result schemas `ctx` knows, then the budget.
    pub fn validate(&self, ctx: &impl PlanContext) -> Result<(), PlanError> {
        self.validate_with(ctx, true)
    }

    /// [`Plan::validate`] for a plan still being drafted: sub-tasks without
    /// an executor are allowed (the card asks for a manual pick); everything
    /// else is checked.
    pub fn validate_draft(&self, ctx: &impl PlanContext) -> Result<(), PlanError> {
        self.validate_with(ctx, false)
    }

    fn validate_with(
        &self,
        ctx: &impl PlanContext,
        require_executors: bool,
    ) -> Result<(), PlanError> {
        self.validate_shape()?;
        for task in self.sorted()? {
            if !ctx.is_known_capability(&task.capability) {
                return Err(PlanError::UnknownCapability {
                    index: task.index,
                    capability: task.capability.clone(),
                });
            }
            let Some(executor) = task.executor else {
                if require_executors {
                    return Err(PlanError::ExecutorUnassigned(task.index));
                }
                continue;
            };
            match ctx.executor_status(executor) {
                ExecutorStatus::Active => {}
                ExecutorStatus::Paused => {
                    return Err(PlanError::ExecutorPaused { index: task.index, executor });
                }
                ExecutorStatus::Unknown => {
                    return Err(PlanError::ExecutorNotRegistered { index: task.index, executor });
                }
            }
            match ctx.executor_price(executor, &task.capability) {
                None => {}
                Some(None) => {
                    return Err(PlanError::ExecutorOffer {
                        index: task.index,
                        executor,
                        problem: format!("does not offer `{}`", task.capability),
                    });
                }
                Some(Some(price)) if price > task.cost => {
                    return Err(PlanError::ExecutorOffer {
                        index: task.index,
                        executor,
                        problem: format!(
                            "asks {} for `{}` but the sub-task pays {}",
                            price.with_unit(),
                            task.capability,
                            task.cost.with_unit()
                        ),
                    });
                }
                Some(Some(_)) => {}
            }
        }
        self.validate_condition_fields(ctx)?;
        self.validate_group_budgets()?;
        let total = self.total_cost()?;
        if total > self.budget {
            return Err(PlanError::OverBudget {
                total,
                budget: self.budget,
                excess: total.checked_sub(self.budget).unwrap_or_default(),
            });
        }
        Ok(())
    }

    /// Sum of sub-task costs.
    pub fn total_cost(&self) -> Result<Usdc, PlanError> {
        Usdc::sum(self.subtasks.iter().map(|task| task.cost)).ok_or(PlanError::CostOverflow)
    }
}

/// At most [`MAX_CHOSEN_BY`] words of 1 to [`MAX_CHOSEN_BY_CHARS`]
/// characters, none with a control character.
fn check_chosen_by(index: u32, words: &[String]) -> Result<(), PlanError> {
    let bad = |problem: String| Err(PlanError::InvalidChosenBy { index, problem });
    if words.len() > MAX_CHOSEN_BY {
        return bad(format!("lists {} words, more than {MAX_CHOSEN_BY}", words.len()));
    }
    for w in words {
        let chars = w.chars().count();
        if w.trim().is_empty() || chars > MAX_CHOSEN_BY_CHARS || w.chars().any(char::is_control) {
            return bad(format!(
                "word {:?} must be 1 to {MAX_CHOSEN_BY_CHARS} characters with no control characters",
                w.chars().take(MAX_CHOSEN_BY_CHARS).collect::<String>()
            ));
        }
    }
    Ok(())
}
