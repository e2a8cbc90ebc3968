//! What bounds a run's money. The per-plan spend cap bounds the plan's
//! budget, every nested plan's budget share and the plan's total, at
//! proposal, edit and approval. Approval fixes each sub-task's cost as its
//! `approved` cost: no attempt is funded above it, and automatic recovery
//! hands a sub-task only to agents asking no more than its cost. Only a
//! person's change of executor raises a cost — to the new executor's price,
//! within the plan's budget, every enclosing share and the cap, and on a
//! high-stakes run with the new amount typed — and the raise is a
//! `cost_raised` event naming the decision.

use alloy::primitives::Address;
use tessera_bindings::usdc::Usdc;

use super::{Orchestrator, RunCtx, RunError};
use crate::{
    plan::{Plan, PlanError, SubTask},
    state::{DecisionKind, Pending, Progress, RunEvent, Stakes},
};

/// Why money may not move as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpendError {
    /// The plan's budget is over the spend cap.
    #[error(
        "the plan's budget of {budget} USDC is over the per-plan spend cap of {cap} USDC: \
         a budget is what the plan may spend, and the cap bounds it"
    )]
    BudgetOverCap {
        /// The plan's budget.
        budget: Usdc,
        /// The spend cap.
        cap: Usdc,
    },
    /// A nested plan's budget share is over the spend cap.
    #[error(
        "the budget share of {budget} USDC of nested plan `{path}` is over the per-plan \
         spend cap of {cap} USDC"
    )]
    ShareOverCap {
        /// The nested step.
        path: String,
        /// Its share.
        budget: Usdc,
        /// The spend cap.
        cap: Usdc,
    },
    /// The plan's sub-tasks cost more than the spend cap.
    #[error("the plan spends {total} USDC, over the per-plan spend cap of {cap} USDC")]
    TotalOverCap {
        /// Sum of sub-task costs.
        total: Usdc,
        /// The spend cap.
        cap: Usdc,
    },
    /// A change of executor would raise a cost past a limit.
    #[error(
        "giving sub-task {index} to {executor} raises its cost from {from} to {to} USDC: \
         {limit}"
    )]
    RaiseRefused {
        /// The sub-task.
        index: u32,
        /// The executor asked for.
        executor: Address,
        /// Its cost now.
        from: Usdc,
        /// The executor's price.
        to: Usdc,
        /// Which limit it would pass, in words.
        limit: String,
    },
    /// A raise on a high-stakes run without the new amount typed.
    #[error(
        "this run is high-stakes: giving sub-task {index} to {executor} raises its cost from \
         {from} to {to} USDC; confirm by sending the new amount with the executor \
         (\"amount\": \"{to}\")"
    )]
    RaiseUnconfirmed {
        /// The sub-task.
        index: u32,
        /// The executor asked for.
        executor: Address,
        /// Its cost now.
        from: Usdc,
        /// The executor's price.
        to: Usdc,
    },
    /// The amount typed is not what the change makes the sub-task cost.
    #[error(
        "typed amount {typed} USDC does not match the {cost} USDC sub-task {index} costs with \
         {executor}"
    )]
    TypedMismatch {
        /// The sub-task.
        index: u32,
        /// The executor asked for.
        executor: Address,
        /// What was typed.
        typed: Usdc,
        /// What the sub-task would cost.
        cost: Usdc,
    },
    /// The new executor's price moved past what the person decided between
    /// the decision and its turn.
    #[error(
        "{executor} now asks {price} USDC for sub-task {index}, more than the {decided} USDC \
         decided: decide again"
    )]
    PriceMoved {
        /// The sub-task.
        index: u32,
        /// The executor.
        executor: Address,
        /// Its price now.
        price: Usdc,
        /// The cost the person accepted (its current cost when they
        /// accepted no raise).
        decided: Usdc,
    },
    /// A creation would fund more than the sub-task's approved cost.
    #[error(
        "sub-task {index} would be funded with {amount} USDC, over the {approved} USDC \
         approved for it: nothing sent"
    )]
    OverApproved {
        /// The sub-task.
        index: u32,
        /// The amount asked.
        amount: Usdc,
        /// Its approved cost.
        approved: Usdc,
    },
}

impl SpendError {
    /// Whether a person's confirmation is what is missing (as opposed to a
    /// limit refusing the amount).
    pub fn is_unconfirmed(&self) -> bool {
        matches!(self, Self::RaiseUnconfirmed { .. } | Self::TypedMismatch { .. })
    }
}

/// Checks `plan` against the per-plan spend cap `cap`: its budget, each
/// nested plan's budget share and the sum of its costs are each at most
/// `cap`.
pub fn check_cap(plan: &Plan, cap: Usdc) -> Result<(), RunError> {
    if plan.budget > cap {
        return Err(SpendError::BudgetOverCap { budget: plan.budget, cap }.into());
    }
    if let Some(g) = plan.groups.iter().find(|g| g.budget > cap) {
        let path = g.path.to_string();
        return Err(SpendError::ShareOverCap { path, budget: g.budget, cap }.into());
    }
    let total = plan.total_cost()?;
    if total > cap {
        return Err(SpendError::TotalOverCap { total, cap }.into());
    }
    Ok(())
}

/// The cost sub-task `index` of `plan` gets when `executor`, asking
/// `price`, takes it over: `None` when the price is within its cost (the
/// cost stays), else the price — refused when the plan would then cost
/// more than its budget, an enclosing nested plan more than its share, or
/// either more than the spend cap `cap`.
pub fn raise(
    plan: &Plan,
    index: u32,
    executor: Address,
    price: Usdc,
    cap: Usdc,
) -> Result<Option<Usdc>, RunError> {
    let from = plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?.cost;
    if price <= from {
        return Ok(None);
    }
    let refused =
        |limit: String| SpendError::RaiseRefused { index, executor, from, to: price, limit };
    let cost_of = |t: &SubTask| if t.index == index { price } else { t.cost };
    let total = Usdc::sum(plan.subtasks.iter().map(cost_of)).ok_or(PlanError::CostOverflow)?;
    if total > plan.budget {
        let limit =
            format!("the plan would cost {total} USDC, over its {} USDC budget", plan.budget);
        return Err(refused(limit).into());
    }
    for g in plan.groups_of(index) {
        let members = plan.members(&g.path);
        let inside = plan.subtasks.iter().filter(|t| members.contains(&t.index)).map(cost_of);
        let share = Usdc::sum(inside).ok_or(PlanError::CostOverflow)?;
        if share > g.budget {
            let limit = format!(
                "nested plan `{}` would cost {share} USDC, over its {} USDC share",
                g.path, g.budget
            );
            return Err(refused(limit).into());
        }
    }
    if total > cap {
        let limit =
            format!("the plan would cost {total} USDC, over the per-plan spend cap of {cap} USDC");
        return Err(refused(limit).into());
    }
    Ok(Some(price))
}

/// What the escrow is asked to hold for `task`: its cost, refused when
/// that is more than its approved cost. A sub-task approved before costs
/// were kept (`approved` unset) has its cost as its approved cost.
pub fn funding(task: &SubTask) -> Result<Usdc, SpendError> {
    let approved = task.approved.unwrap_or(task.cost);
    if task.cost > approved {
        return Err(SpendError::OverApproved { index: task.index, amount: task.cost, approved });
    }
    Ok(task.cost)
}

/// The argument queued for a change of sub-task executor to `executor`:
/// its address, and the cost the person accepted when it raises one
/// (`0x… at 0.500000 USDC`).
pub fn executor_arg(executor: Address, raised: Option<Usdc>) -> String {
    match raised {
        Some(cost) => format!("{executor} at {cost} USDC"),
        None => executor.to_string(),
    }
}

/// The address and the accepted cost in a queued change of executor's
/// argument (see [`executor_arg`]).
pub fn parse_executor_arg(arg: Option<&str>) -> (Option<&str>, Option<Usdc>) {
    let Some(arg) = arg else { return (None, None) };
    match arg.split_once(" at ") {
        Some((address, cost)) => (Some(address), Usdc::parse(cost).ok()),
        None => (Some(arg), None),
    }
}

impl Orchestrator {
    /// Checks `plan` against this service's spend cap (see [`check_cap`]).
    pub(super) fn check_spend_cap(&self, plan: &Plan) -> Result<(), RunError> {
        check_cap(plan, self.config.max_plan_spend)
    }

    /// What a person's change of sub-task `index`'s executor to `executor`
    /// does to its cost, checked when the decision is taken: `None` when
    /// the executor asks no more than the cost, else the raised cost,
    /// within the budget, the shares and the cap. On a high-stakes run a
    /// raise needs `typed` to be the new cost; a typed amount is always
    /// checked against the cost the change gives.
    pub(super) async fn executor_raise(
        &self,
        plan: &Plan,
        stakes: Stakes,
        index: u32,
        executor: Address,
        typed: Option<&str>,
    ) -> Result<Option<Usdc>, RunError> {
        let task = plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?;
        let from = task.cost;
        let price = self.chain.price_of(executor, &task.capability).await?;
        let raised = match price {
            Some(price) => raise(plan, index, executor, price, self.config.max_plan_spend)?,
            None => None,
        };
        let cost = raised.unwrap_or(from);
        match typed {
            Some(text) => {
                let typed = Usdc::parse(text)
                    .map_err(|source| RunError::Amount { text: text.into(), source })?;
                if typed != cost {
                    return Err(SpendError::TypedMismatch { index, executor, typed, cost }.into());
                }
            }
            None if stakes == Stakes::High && raised.is_some() => {
                return Err(SpendError::RaiseUnconfirmed { index, executor, from, to: cost }.into());
            }
            None => {}
        }
        Ok(raised)
    }

    /// Applies the raise a person's change of executor carries, as
    /// sub-task `row` is queued again with its new executor: when that
    /// executor asks more than the sub-task's cost, the cost and the
    /// approved cost become its price — only up to what the person
    /// accepted, and within the budget, the shares and the cap, checked
    /// again — and a `cost_raised` event names the decision. Nothing else
    /// (a retry, automatic recovery) ever raises a cost.
    pub(super) async fn apply_raise(
        &self,
        ctx: &RunCtx,
        row: &Progress,
        decision: &Pending,
    ) -> Result<(), RunError> {
        if decision.kind != DecisionKind::Executor {
            return Ok(());
        }
        // The plan with whatever the decisions before this one did.
        let (id, plan) = (ctx.id(), ctx.plan());
        let index = row.idx;
        let task = plan.subtask(index).ok_or(PlanError::UnknownIndex(index))?;
        let executor = row.executor;
        let Some(price) = self.chain.price_of(executor, &task.capability).await? else {
            return Ok(());
        };
        if price <= task.cost {
            return Ok(());
        }
        let (_, accepted) = parse_executor_arg(decision.arg.as_deref());
        let decided = accepted.unwrap_or(task.cost);
        if price > decided {
            return Err(SpendError::PriceMoved { index, executor, price, decided }.into());
        }
        raise(&plan, index, executor, price, self.config.max_plan_spend)?;
        let from = task.cost;
        let mut raised = Plan::clone(&plan);
        if let Some(t) = raised.subtasks.iter_mut().find(|t| t.index == index) {
            t.cost = price;
            t.approved = Some(price);
        }
        let json = super::commands::plan_json(&raised)?;
        if !self.store.update_plan(id, &json, ctx.state()).await? {
            return Err(RunError::changed(id, "a change of executor"));
        }
        ctx.set_plan(raised);
        tracing::info!(index, %executor, %from, to = %price, "a person's decision raised the cost");
        let event = RunEvent::CostRaised {
            plan_id: plan.id,
            index,
            executor,
            from,
            to: price,
            decision: decision.seq,
        };
        self.emit(&plan, &format!("raised:{}", decision.seq), &event).await
    }
}

#[cfg(test)]
mod tests {
    use alloy::primitives::B256;

    use super::*;
    use crate::plan::{Group, ReviewMode, StepPath};

    fn u(units: u128) -> Usdc {
        Usdc::from_base_units(units)
    }

    /// Two sub-tasks of 400 and 200 under `budget`; the first inside
    /// nested plan `0` with a share of `share`.
    fn plan(budget: u128, share: u128) -> Plan {
        let mut p = Plan::new(B256::repeat_byte(7), u(budget), ReviewMode::Auto);
        let path: StepPath = "0".parse().unwrap();
        p.subtasks = vec![
            SubTask {
                index: 0,
                capability: "summarize".into(),
                spec: "s".into(),
                cost: u(400),
                deadline_offset_secs: 600,
                path: Some("0.0".parse().unwrap()),
                ..Default::default()
            },
            SubTask {
                index: 1,
                capability: "summarize".into(),
                spec: "t".into(),
                cost: u(200),
                deadline_offset_secs: 600,
                path: Some("1".parse().unwrap()),
                ..Default::default()
            },
        ];
        p.groups =
            vec![Group { path, spec: "g".into(), budget: u(share), review: None, when: None }];
        p
    }

    #[test]
    fn the_cap_bounds_the_budget_every_share_and_the_total() {
        assert_eq!(check_cap(&plan(1_000, 500), u(1_000)).map_err(|e| e.to_string()), Ok(()));
        let err = check_cap(&plan(1_000_000_000, 500), u(1_000)).unwrap_err();
        assert!(
            matches!(err, RunError::Spend(SpendError::BudgetOverCap { budget, cap })
                if budget == u(1_000_000_000) && cap == u(1_000)),
            "{err}"
        );
        let text = err.to_string();
        assert!(text.contains("1000.000000 USDC") && text.contains("0.001000 USDC"), "{text}");
        let err = check_cap(&plan(1_000, 5_000), u(1_000)).unwrap_err();
        assert!(
            matches!(err, RunError::Spend(SpendError::ShareOverCap { ref path, .. }) if path == "0")
        );
        // A budget under the cap, costs over it.
        let mut p = plan(500, 500);
        p.subtasks[1].cost = u(2_000);
        let err = check_cap(&p, u(1_000)).unwrap_err();
        assert!(
            matches!(err, RunError::Spend(SpendError::TotalOverCap { total, .. }) if total == u(2_400))
        );
        assert!(err.to_string().contains("spend cap"));
    }

    #[test]
    fn a_raise_stays_within_the_budget_the_shares_and_the_cap() {
        let who = Address::repeat_byte(9);
        let p = plan(1_000, 600);
        assert_eq!(raise(&p, 0, who, u(300), u(5_000)).unwrap(), None, "cheaper: no raise");
        assert_eq!(raise(&p, 0, who, u(400), u(5_000)).unwrap(), None, "same: no raise");
        assert_eq!(raise(&p, 0, who, u(600), u(5_000)).unwrap(), Some(u(600)));
        let refused =
            |p: &Plan, price, cap| raise(p, 0, who, u(price), u(cap)).unwrap_err().to_string();
        // 601 + 200 fits the budget but not the 600 share.
        let text = refused(&p, 601, 5_000);
        assert!(text.contains("nested plan `0` would cost 0.000601 USDC"), "{text}");
        let text = refused(&plan(700, 900), 601, 5_000);
        assert!(text.contains("over its 0.000700 USDC budget"), "{text}");
        assert!(text.contains("from 0.000400 to 0.000601 USDC"), "{text}");
        let text = refused(&plan(900, 900), 601, 700);
        assert!(text.contains("spend cap of 0.000700 USDC"), "{text}");
        assert!(matches!(
            raise(&p, 9, who, u(1), u(1)),
            Err(RunError::Plan(PlanError::UnknownIndex(9)))
        ));
    }

    #[test]
    fn an_approved_cost_is_an_integer_of_base_units_absent_before_approval() {
        let mut p = plan(1_000, 600);
        let json = serde_json::to_value(&p).unwrap();
        assert!(json["subtasks"][0].get("approved").is_none(), "{json}");
        p.subtasks[0].approved = Some(u(400));
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["subtasks"][0]["approved"], 400);
        let back: Plan = serde_json::from_value(json).unwrap();
        assert_eq!(back.subtasks[0].approved, Some(u(400)));
    }

    #[test]
    fn nothing_is_funded_over_its_approved_cost() {
        let mut t = plan(1_000, 600).subtasks[0].clone();
        assert_eq!(funding(&t), Ok(u(400)), "approved before costs were kept");
        t.approved = Some(u(400));
        assert_eq!(funding(&t), Ok(u(400)));
        t.cost = u(401);
        assert_eq!(
            funding(&t),
            Err(SpendError::OverApproved { index: 0, amount: u(401), approved: u(400) })
        );
    }

    #[test]
    fn a_queued_change_of_executor_carries_the_accepted_cost() {
        let a = Address::repeat_byte(0xab);
        let plain = executor_arg(a, None);
        assert_eq!(parse_executor_arg(Some(&plain)), (Some(plain.as_str()), None));
        let raised = executor_arg(a, Some(u(500_000)));
        assert_eq!(raised, format!("{a} at 0.500000 USDC"));
        let (address, cost) = parse_executor_arg(Some(&raised));
        assert_eq!((address.unwrap().parse::<Address>().unwrap(), cost), (a, Some(u(500_000))));
        assert_eq!(parse_executor_arg(None), (None, None));
    }
}
