//! Choosing an executor among the agents that offer a capability, by price,
//! by record, or by both: a pure function of the offers and each agent's
//! record, so the same inputs always give the same choice and the same words.
//!
//! # The record
//!
//! An agent's [`AgentRecord`] counts the tasks it settled that say something
//! about it: `completed` (paid, or split after a dispute), `refunded` (a
//! dispute it lost, full refund) and `expired` (not accepted, or not
//! delivered, before the deadline). A task the client cancelled before
//! acceptance says nothing about the agent and is not counted. So
//! `settled = completed + refunded + expired`.
//!
//! # The factors
//!
//! - **Reliability**, the mean of a Beta(2, 1) prior updated by the record
//!   *weighed by the money behind it* ([`Evidence`], see
//!   [`tessera_records::evidence`]):
//!   `R = (completed + 2) / (settled + 3)` over weighted tasks, where a task
//!   counts `min(amount, 1 USDC)` dollars' worth, nothing below 0.01 USDC,
//!   a funder's `n` units count `√n`, a funder the agent itself paid counts
//!   a tenth, and the choosing sponsor's own tasks count double. A task paid
//!   a dollar by a stranger counts one; the examples below are such tasks.
//!   An agent with no record starts at
//!   2/3 (67 %): a new agent is trusted a little, not shut out, and the
//!   prior fades as tasks settle (19 of 20 completed: 21/23 = 91 %; 1 of 5,
//!   4 expired: 3/8 = 38 %). The prior leans to success (2:1) because an
//!   agent that registered and staked its offer is more likely honest than
//!   not, and so that one early failure does not bury a newcomer
//!   (0 of 1: 2/4 = 50 %).
//! - **Latency**, bounded to `[0.8, 1]` so it only breaks near-ties of
//!   reliability: `L = 0.8 + 0.2 · T / (T + m)` with `m` the agent's median
//!   seconds from acceptance to delivery and `T` = [`TARGET_SECS`] (300 s).
//!   Instant delivery gives 1, `m = T` gives 0.9, an hour about 0.82. An
//!   agent with no median yet is taken at `m = T` (0.9).
//! - **Price**, relative to the cheapest eligible offer: `P = cheapest /
//!   price`, 1 for the cheapest.
//!
//! # The policies
//!
//! - [`Selection::Cheapest`]: the lowest price; equal prices go to the
//!   lowest address. Score: `P`.
//! - [`Selection::Reliable`]: the record only, price aside. Score: `R · L`.
//! - [`Selection::Balanced`]: expected successful deliveries per unit of
//!   price, relative to the cheapest. Score: `R · L · P` (the three weighted
//!   equally in a product). A cheaper agent with a poor record (1 of 5, 4
//!   expired: 0.38) loses to a reliable one 20 % dearer (19 of 20: 0.91 ·
//!   0.83 = 0.76); a merely new agent (0.67 · 0.9 = 0.60) still wins
//!   against that reliable one once it is about a third cheaper or more,
//!   and always against agents of a worse record at its price or above.
//!
//! Equal scores go to the lower price, then to the lower address. Without
//! any records every agent has the same `R` and `L`, so every policy picks
//! exactly what [`Selection::Cheapest`] picks.
//!
//! Ineligible offers never score: paused agents, a zero price (no offer),
//! a price over the caller's maximum, and the excluded addresses (the
//! executor being replaced, say).
//!
//! # The ranking in words
//!
//! [`explain`] lists every eligible offer best first, each with its reason:
//! the first why it is chosen (the words of [`Choice::reason`]), every
//! other why it ranks below *the one just above it* (the words of
//! [`RunnerUp::reason`], against that neighbour rather than the first, so
//! each step down the list is accounted for).

use std::cmp::Ordering;

use alloy::primitives::Address;
use serde::Serialize;
use tessera_bindings::usdc::{UNIT, Usdc};
use tessera_records::evidence::EVIDENCE_FLOOR_UNITS;
pub use tessera_records::{
    AgentRecord, LATENCY_FLOOR, PRIOR_FAILURES, PRIOR_SUCCESSES, TARGET_SECS, evidence::Evidence,
};

use crate::plan::{Choice, RunnerUp, Selection};

/// One agent's offer of the capability, with its record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Offer {
    /// The agent.
    pub agent: Address,
    /// Its registered price.
    pub price: Usdc,
    /// Whether the agent is active (a paused agent cannot be given work).
    pub active: bool,
    /// What its tasks show (the default, prior only, when unknown).
    pub record: AgentRecord,
    /// No sign of life from it within [`tessera_records::RECENT_SECS`]
    /// (it accepted, delivered or declined no task): ranked after every
    /// agent seen working, whatever the policy. False when nothing is known
    /// of anyone (no records source).
    pub quiet: bool,
}

/// What may be chosen.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits<'a> {
    /// Agents never chosen (e.g. the executor being replaced).
    pub exclude: &'a [Address],
    /// The most a choice may cost; any price when none.
    pub max_price: Option<Usdc>,
}

impl Limits<'_> {
    /// Whether `offer` may be chosen at all.
    pub fn admits(&self, offer: &Offer) -> bool {
        offer.active
            && offer.price > Usdc::ZERO
            && self.max_price.is_none_or(|m| offer.price <= m)
            && !self.exclude.contains(&offer.agent)
    }
}

/// An eligible offer with its factors and score under one policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The offer.
    pub offer: Offer,
    /// `R`.
    pub reliability: f64,
    /// `L`.
    pub latency: f64,
    /// `P = cheapest / price`.
    pub price_factor: f64,
    /// The policy's score, in `[0, 1]`.
    pub score: f64,
}

impl Scored {
    /// The score in basis points (0–10000).
    pub fn score_bps(&self) -> u32 {
        bps(self.score)
    }

    /// `R · L`: the record alone.
    fn record_score(&self) -> f64 {
        self.reliability * self.latency
    }
}

/// `offer`'s factors and its score under `policy`, against the cheapest
/// eligible price `cheapest`.
pub fn score(policy: Selection, offer: Offer, cheapest: Usdc) -> Scored {
    let reliability = offer.record.reliability();
    let latency = offer.record.latency();
    let price_factor = if offer.price.base_units() == 0 {
        1.0
    } else {
        (cheapest.base_units() as f64 / offer.price.base_units() as f64).min(1.0)
    };
    let score = match policy {
        Selection::Cheapest => price_factor,
        Selection::Reliable => reliability * latency,
        Selection::Balanced => reliability * latency * price_factor,
    };
    Scored { offer, reliability, latency, price_factor, score }
}

/// Every eligible offer scored under `policy`, best first: agents seen
/// working recently before quiet ones ([`Offer::quiet`]), then by score,
/// then the lower price, then the lower address. The cheapest policy compares
/// prices exactly, never through a rounded ratio.
pub fn rank(policy: Selection, offers: &[Offer], limits: Limits<'_>) -> Vec<Scored> {
    let eligible: Vec<&Offer> = offers.iter().filter(|o| limits.admits(o)).collect();
    let Some(cheapest) = eligible.iter().map(|o| o.price).min() else { return Vec::new() };
    let mut scored: Vec<Scored> =
        eligible.into_iter().map(|&o| score(policy, o, cheapest)).collect();
    scored.sort_by(|a, b| a.offer.quiet.cmp(&b.offer.quiet).then(by_policy(policy, a, b)));
    scored
}

/// The policy's own order of two scored offers, signs of life aside: by
/// score (but for the cheapest), then the lower price, then the lower
/// address.
fn by_policy(policy: Selection, a: &Scored, b: &Scored) -> Ordering {
    let by_score = match policy {
        Selection::Cheapest => Ordering::Equal,
        _ => b.score.total_cmp(&a.score),
    };
    by_score.then(a.offer.price.cmp(&b.offer.price)).then(a.offer.agent.cmp(&b.offer.agent))
}

/// The executor `policy` picks for sub-task `index` among `offers`, with
/// its score, the reasons in words, and the runner-up and why it lost;
/// `None` when no offer is eligible.
pub fn select(
    index: u32,
    policy: Selection,
    offers: &[Offer],
    limits: Limits<'_>,
) -> Option<Choice> {
    let ranked = rank(policy, offers, limits);
    let best = *ranked.first()?;
    let cheapest = ranked.iter().map(|s| s.offer.price).min().unwrap_or(best.offer.price);
    let runner_up = ranked.get(1).map(|ru| RunnerUp {
        executor: ru.offer.agent,
        price: ru.offer.price,
        score_bps: ru.score_bps(),
        reason: why_lost(policy, &best, ru),
    });
    Some(Choice {
        index,
        policy,
        executor: best.offer.agent,
        price: best.offer.price,
        score_bps: best.score_bps(),
        reason: why_chosen(policy, &best, cheapest, ranked.len()),
        runner_up,
        quiet: best.offer.quiet,
    })
}

/// One eligible offer in a ranking, with why it stands where it does.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranked {
    /// Its place, 1 for the best.
    pub rank: u32,
    /// The agent.
    pub agent: Address,
    /// Its price.
    #[serde(with = "tessera_bindings::usdc::as_integer")]
    pub price: Usdc,
    /// The policy's score, in basis points (0–10000).
    pub score_bps: u32,
    /// `R`, from the weighed record.
    pub reliability: f64,
    /// `L`.
    pub latency: f64,
    /// `P = cheapest / price`.
    pub price_factor: f64,
    /// The record in words ([`record_words`]).
    pub record: String,
    /// The agent ranked just above it, which it lost to; `None` for the first.
    pub below: Option<Address>,
    /// The first: why it is chosen; any other: why it lost to [`Ranked::below`].
    pub reason: String,
}

/// Every eligible offer ranked under `policy` ([`rank`]), best first, each
/// with its reason: the first why it is chosen, every other why it lost to
/// the one just above it.
pub fn explain(policy: Selection, offers: &[Offer], limits: Limits<'_>) -> Vec<Ranked> {
    let ranked = rank(policy, offers, limits);
    let Some(cheapest) = ranked.iter().map(|s| s.offer.price).min() else { return Vec::new() };
    ranked
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (below, reason) = match i.checked_sub(1).map(|up| &ranked[up]) {
                None => (None, why_chosen(policy, s, cheapest, ranked.len())),
                Some(above) => (Some(above.offer.agent), why_lost(policy, above, s)),
            };
            Ranked {
                rank: u32::try_from(i + 1).unwrap_or(u32::MAX),
                agent: s.offer.agent,
                price: s.offer.price,
                score_bps: s.score_bps(),
                reliability: s.reliability,
                latency: s.latency,
                price_factor: s.price_factor,
                record: record_words(&s.offer.record),
                below,
                reason,
            }
        })
        .collect()
}

fn bps(x: f64) -> u32 {
    (x.clamp(0.0, 1.0) * 10_000.0).round() as u32
}

fn percent(x: f64) -> u32 {
    (x.clamp(0.0, 1.0) * 100.0).round() as u32
}

/// A price in USDC with at least two decimals and no trailing zeros beyond:
/// `0.40`, `1.25`, `0.000001`.
pub fn short_usdc(amount: Usdc) -> String {
    let units = amount.base_units();
    let frac = format!("{:06}", units % UNIT);
    let frac = frac.trim_end_matches('0');
    format!("{}.{frac:0<2} USDC", units / UNIT)
}

/// `19/20 settled, 1 expired` or `no settled tasks yet`, then what the
/// weighing made of them when it is not one per task: `weighing 2.5 from 3
/// funders (1.0 your own, 1 paid by the agent)`, `100 below 0.01 USDC
/// count nothing`.
pub fn record_words(r: &AgentRecord) -> String {
    let n = r.settled();
    if n == 0 {
        return "no settled tasks yet".to_owned();
    }
    let mut out = format!("{}/{n} settled", r.completed);
    if r.expired > 0 {
        out.push_str(&format!(", {} expired", r.expired));
    }
    if r.refunded > 0 {
        let s = if r.refunded == 1 { "" } else { "s" };
        out.push_str(&format!(", {} dispute{s} lost", r.refunded));
    }
    let w = &r.weight;
    if w.funders > 0 && (w.settled() - n as f64).abs() >= 0.05 {
        let s = if w.funders == 1 { "" } else { "s" };
        out.push_str(&format!(", weighing {:.1} from {} funder{s}", w.settled(), w.funders));
        let mut notes = Vec::new();
        if w.own > 0.0 {
            notes.push(format!("{:.1} your own", w.own));
        }
        if w.linked_funders > 0 {
            notes.push(format!("{} paid by the agent", w.linked_funders));
        }
        if !notes.is_empty() {
            out.push_str(&format!(" ({})", notes.join(", ")));
        }
    }
    if w.below_floor > 0 {
        let floor = short_usdc(Usdc::from_base_units(EVIDENCE_FLOOR_UNITS as u128));
        out.push_str(&format!(", {} below {floor} count nothing", w.below_floor));
    }
    out
}

/// `91% reliable (19/20 settled, prior 2:1), median 4s`.
fn reliability_words(s: &Scored) -> String {
    let mut out = format!(
        "{}% reliable ({}, prior {PRIOR_SUCCESSES}:{PRIOR_FAILURES})",
        percent(s.reliability),
        record_words(&s.offer.record)
    );
    if let Some(m) = s.offer.record.median_completion_secs {
        out.push_str(&format!(", median {}", duration_words(m)));
    }
    out
}

fn duration_words(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs}s"),
        120..7_200 => format!("{}m", secs / 60),
        _ => format!("{}h", secs / 3_600),
    }
}

/// What a quiet agent's reason says of it.
pub const QUIET_WORDS: &str =
    "no sign of life in the last day (no task accepted, delivered or declined)";

fn why_chosen(policy: Selection, best: &Scored, cheapest: Usdc, eligible: usize) -> String {
    let reason = why_chosen_by_policy(policy, best, cheapest, eligible);
    if best.offer.quiet { format!("{reason}; {QUIET_WORDS}") } else { reason }
}

fn why_chosen_by_policy(
    policy: Selection,
    best: &Scored,
    cheapest: Usdc,
    eligible: usize,
) -> String {
    let price = short_usdc(best.offer.price);
    match policy {
        Selection::Cheapest => {
            let of = if eligible == 1 {
                "the only eligible offer".to_owned()
            } else {
                format!("the lowest of {eligible} offers")
            };
            format!("cheapest: {price}, {of}; {}", reliability_words(best))
        }
        Selection::Reliable => format!("reliable: {}; {price}", reliability_words(best)),
        Selection::Balanced => {
            let against = if best.offer.price == cheapest {
                "the cheapest".to_owned()
            } else {
                format!("cheapest {}", short_usdc(cheapest))
            };
            format!("balanced: {}, {price} ({against})", reliability_words(best))
        }
    }
}

fn why_lost(policy: Selection, best: &Scored, ru: &Scored) -> String {
    if ru.offer.quiet && !best.offer.quiet {
        // Below for its silence; and for the policy's own reason too, when
        // the policy alone would also rank it below.
        return if by_policy(policy, best, ru) == Ordering::Less {
            format!("{QUIET_WORDS}, unlike the one above; {}", why_lost_by_policy(policy, best, ru))
        } else {
            let price = short_usdc(ru.offer.price);
            let record = format!(
                "{}% reliable ({})",
                percent(ru.reliability),
                record_words(&ru.offer.record)
            );
            format!("{QUIET_WORDS}, unlike the one above: {record}, {price}")
        };
    }
    why_lost_by_policy(policy, best, ru)
}

fn why_lost_by_policy(policy: Selection, best: &Scored, ru: &Scored) -> String {
    let price = short_usdc(ru.offer.price);
    let record =
        format!("{}% reliable ({})", percent(ru.reliability), record_words(&ru.offer.record));
    let dearer = ru.offer.price > best.offer.price;
    let less_reliable = ru.record_score() < best.record_score();
    match policy {
        Selection::Cheapest if dearer => {
            format!("dearer: {price} against {}; {record}", short_usdc(best.offer.price))
        }
        Selection::Reliable if less_reliable => format!("less reliable: {record}; {price}"),
        Selection::Balanced if ru.score < best.score => {
            let cause = match (less_reliable, dearer) {
                (true, true) => "less reliable and dearer",
                (true, false) => "less reliable",
                (false, true) => "dearer",
                // Better on both counts can't score lower; only rounding.
                (false, false) => "lower score",
            };
            format!("{cause}: {record}, {price}")
        }
        Selection::Reliable if dearer => format!("as reliable, dearer: {record}; {price}"),
        _ => format!("tie, the higher address: {record}, {price}"),
    }
}

#[cfg(test)]
mod tests {
    use alloy::primitives::address;

    use super::*;

    const A: Address = address!("0x00000000000000000000000000000000000000a1");
    const B: Address = address!("0x00000000000000000000000000000000000000b2");
    const C: Address = address!("0x00000000000000000000000000000000000000c3");

    fn usdc(units: u128) -> Usdc {
        Usdc::from_base_units(units)
    }

    fn offer(agent: Address, price: u128, record: AgentRecord) -> Offer {
        Offer { agent, price: usdc(price), active: true, record, quiet: false }
    }

    fn rec(completed: u64, refunded: u64, expired: u64, median: Option<u64>) -> AgentRecord {
        AgentRecord::uniform(completed, refunded, expired, median)
    }

    const NEW: AgentRecord = AgentRecord {
        completed: 0,
        refunded: 0,
        expired: 0,
        median_completion_secs: None,
        weight: Evidence {
            completed: 0.0,
            failed: 0.0,
            funders: 0,
            linked_funders: 0,
            below_floor: 0,
            own: 0.0,
        },
        last_active_at: None,
    };

    fn none() -> Limits<'static> {
        Limits::default()
    }

    #[test]
    fn the_factors_follow_the_documented_formulas() {
        assert!((NEW.reliability() - 2.0 / 3.0).abs() < 1e-12, "prior only");
        assert!((rec(19, 0, 1, None).reliability() - 21.0 / 23.0).abs() < 1e-12);
        assert!((rec(1, 0, 4, None).reliability() - 3.0 / 8.0).abs() < 1e-12);
        assert!((rec(1, 2, 2, None).reliability() - 3.0 / 8.0).abs() < 1e-12, "refunds count");
        assert_eq!(rec(0, 0, 0, Some(0)).latency(), 1.0);
        assert!((NEW.latency() - 0.9).abs() < 1e-12, "unknown is the target");
        assert!((rec(0, 0, 0, Some(300)).latency() - 0.9).abs() < 1e-12);
        assert!(rec(0, 0, 0, Some(u64::MAX)).latency() >= LATENCY_FLOOR);
        let s = score(Selection::Balanced, offer(A, 500, NEW), usdc(400));
        assert!((s.price_factor - 0.8).abs() < 1e-12);
        assert!((s.score - 2.0 / 3.0 * 0.9 * 0.8).abs() < 1e-12);
        assert_eq!(s.score_bps(), 4800);
    }

    #[test]
    fn a_cheap_poor_record_loses_to_a_reliable_agent_a_fifth_dearer() {
        let poor = offer(A, 350_000, rec(1, 0, 4, Some(2)));
        let good = offer(B, 420_000, rec(19, 0, 1, Some(4)));
        let c = select(3, Selection::Balanced, &[poor, good], none()).unwrap();
        assert_eq!((c.index, c.executor, c.price), (3, B, usdc(420_000)));
        assert_eq!(c.policy, Selection::Balanced);
        assert_eq!(
            c.reason,
            "balanced: 91% reliable (19/20 settled, 1 expired, prior 2:1), median 4s, \
             0.42 USDC (cheapest 0.35 USDC)"
        );
        let ru = c.runner_up.unwrap();
        assert_eq!((ru.executor, ru.price), (A, usdc(350_000)));
        assert!(ru.score_bps < c.score_bps);
        assert_eq!(ru.reason, "less reliable: 38% reliable (1/5 settled, 4 expired), 0.35 USDC");

        // The same two under the other policies.
        let c = select(3, Selection::Cheapest, &[poor, good], none()).unwrap();
        assert_eq!((c.executor, c.score_bps), (A, 10_000));
        assert!(c.reason.starts_with("cheapest: 0.35 USDC, the lowest of 2 offers; 38% reliable"));
        let ru = c.runner_up.unwrap();
        assert_eq!(ru.score_bps, 8333);
        assert!(ru.reason.starts_with("dearer: 0.42 USDC against 0.35 USDC"), "{}", ru.reason);
        let c = select(3, Selection::Reliable, &[poor, good], none()).unwrap();
        assert_eq!(c.executor, B);
        assert!(c.reason.starts_with("reliable: 91% reliable"), "{}", c.reason);
    }

    #[test]
    fn a_new_agent_is_not_shut_out() {
        let good = offer(B, 420_000, rec(19, 0, 1, Some(4)));
        // A fifth cheaper is not enough against a strong record ...
        let new = offer(A, 350_000, NEW);
        assert_eq!(select(0, Selection::Balanced, &[new, good], none()).unwrap().executor, B);
        // ... but a third cheaper is, and it beats a poor record at its price.
        let new = offer(A, 270_000, NEW);
        let c = select(0, Selection::Balanced, &[new, good], none()).unwrap();
        assert_eq!(c.executor, A);
        assert!(
            c.reason.contains("67% reliable (no settled tasks yet, prior 2:1)"),
            "{}",
            c.reason
        );
        assert!(c.reason.ends_with("0.27 USDC (the cheapest)"), "{}", c.reason);
        assert_eq!(c.runner_up.unwrap().reason.split(':').next(), Some("dearer"));
        let poor = offer(C, 270_000, rec(1, 0, 4, None));
        assert_eq!(select(0, Selection::Balanced, &[poor, new], none()).unwrap().executor, A);
        // The reliable policy prefers the new agent to a poor record too.
        assert_eq!(select(0, Selection::Reliable, &[poor, new], none()).unwrap().executor, A);
    }

    #[test]
    fn reliable_ignores_price_and_latency_breaks_near_ties() {
        let dear = offer(A, 900_000, rec(20, 0, 0, Some(10)));
        let cheap = offer(B, 100_000, rec(15, 0, 5, Some(10)));
        assert_eq!(select(0, Selection::Reliable, &[cheap, dear], none()).unwrap().executor, A);
        let fast = offer(A, 500_000, rec(10, 0, 0, Some(1)));
        let slow = offer(B, 400_000, rec(10, 0, 0, Some(3_600)));
        let c = select(0, Selection::Reliable, &[slow, fast], none()).unwrap();
        assert_eq!(c.executor, A);
        assert!(c.reason.contains("median 1s"), "{}", c.reason);
        assert!(c.runner_up.unwrap().reason.starts_with("less reliable"));
    }

    #[test]
    fn without_records_every_policy_is_the_cheapest() {
        let offers = [offer(C, 300, NEW), offer(A, 200, NEW), offer(B, 200, NEW)];
        for policy in [Selection::Cheapest, Selection::Reliable, Selection::Balanced] {
            let c = select(0, policy, &offers, none()).unwrap();
            assert_eq!((c.executor, c.price), (A, usdc(200)), "{policy:?}");
            let ru = c.runner_up.unwrap();
            assert_eq!(ru.executor, B, "ties go to the lower address");
            assert!(ru.reason.starts_with("tie, the higher address"), "{}", ru.reason);
        }
    }

    #[test]
    fn ties_go_to_the_lower_price_then_the_lower_address() {
        let r = rec(5, 0, 0, Some(1));
        // The same record: reliable ties on score, the price decides.
        let offers = [offer(A, 300, r), offer(B, 200, r)];
        let c = select(0, Selection::Reliable, &offers, none()).unwrap();
        assert_eq!(c.executor, B);
        assert!(c.runner_up.unwrap().reason.starts_with("as reliable, dearer"));
        // The same price and record: the address decides, in any order.
        let offers = [offer(C, 200, r), offer(B, 200, r)];
        assert_eq!(select(0, Selection::Balanced, &offers, none()).unwrap().executor, B);
        // Cheapest is the lowest price exactly, whatever the records.
        let offers = [offer(B, 200, rec(0, 0, 9, None)), offer(A, 201, rec(50, 0, 0, Some(0)))];
        assert_eq!(select(0, Selection::Cheapest, &offers, none()).unwrap().executor, B);
    }

    #[test]
    fn exclusions_prices_and_paused_agents_are_not_eligible() {
        let good = offer(B, 420_000, rec(19, 0, 1, None));
        let poor = offer(A, 350_000, rec(1, 0, 4, None));
        let paused = Offer { active: false, ..offer(C, 1, rec(99, 0, 0, Some(0))) };
        let free = offer(C, 0, NEW);
        let all = [good, poor, paused, free];
        let only_b = Limits { exclude: &[A], max_price: None };
        let c = select(0, Selection::Cheapest, &all, only_b).unwrap();
        assert_eq!(c.executor, B);
        assert_eq!(c.runner_up, None);
        assert!(c.reason.contains("the only eligible offer"), "{}", c.reason);
        let capped = Limits { exclude: &[], max_price: Some(usdc(400_000)) };
        assert_eq!(select(0, Selection::Reliable, &all, capped).unwrap().executor, A);
        let nothing = Limits { exclude: &[A], max_price: Some(usdc(400_000)) };
        assert_eq!(select(0, Selection::Balanced, &all, nothing), None);
        assert!(rank(Selection::Balanced, &all, nothing).is_empty());
    }

    #[test]
    fn a_self_funded_record_does_not_outrank_one_strangers_paid_for() {
        // A hundred one-unit tasks funded from the agent's second wallet,
        // delivered at once, then the price raised to the honest agent's.
        let sybil = AgentRecord {
            completed: 100,
            median_completion_secs: Some(0),
            weight: Evidence { below_floor: 100, ..Evidence::default() },
            ..AgentRecord::default()
        };
        // Three tasks three sponsors paid 0.40 USDC each.
        let honest = AgentRecord {
            completed: 3,
            median_completion_secs: Some(10),
            weight: Evidence { completed: 1.2, funders: 3, ..Evidence::default() },
            ..AgentRecord::default()
        };
        assert!(
            sybil.unweighted_reliability() > honest.unweighted_reliability(),
            "the unweighted rule ranked the self-funded record first"
        );
        let offers = [offer(A, 400_000, sybil), offer(B, 400_000, honest)];
        for policy in [Selection::Reliable, Selection::Balanced] {
            let c = select(0, policy, &offers, none()).unwrap();
            assert_eq!(c.executor, B, "{policy:?}: {}", c.reason);
            let ru = c.runner_up.unwrap();
            assert!(
                ru.reason.contains("100/100 settled, 100 below 0.01 USDC count nothing"),
                "{}",
                ru.reason
            );
            assert!(c.reason.contains("3/3 settled, weighing 1.2 from 3 funders"), "{}", c.reason);
        }
    }

    /// Wallets, one USDC each, a Sybil that delivers its own tasks at once
    /// needs to outrank an agent that `sponsors` strangers paid a dollar
    /// each with a median of 60 s (the table in docs/reputation.md).
    fn wallets_to_outrank(sponsors: u64, sybil_median: u64) -> u64 {
        let honest = offer(B, 500_000, rec(sponsors, 0, 0, Some(60)));
        (0..10_000)
            .find(|&k| {
                let sybil = offer(A, 500_000, rec(k, 0, 0, Some(sybil_median)));
                [Selection::Reliable, Selection::Balanced]
                    .iter()
                    .all(|&p| select(0, p, &[honest, sybil], none()).unwrap().executor == A)
            })
            .unwrap()
    }

    #[test]
    fn the_attack_costs_in_the_docs_hold() {
        assert_eq!(wallets_to_outrank(5, 0), 4);
        assert_eq!(wallets_to_outrank(20, 0), 11);
        assert_eq!(wallets_to_outrank(100, 0), 21);
        // At the same latency it takes as many wallets as the honest agent has
        // sponsors (an equal score goes to the lower address, the Sybil's here).
        assert_eq!(wallets_to_outrank(20, 60), 20);
        // One wallet's n dollars weigh √n: the same record from one wallet
        // takes the square of the wallets' count in USDC.
        let one = tessera_records::evidence::weigh(
            &[tessera_records::evidence::FunderRecord {
                funder: "0x1".into(),
                completed: 121,
                failed: 0,
                below_floor: 0,
                completed_units: 121 * 1_000_000,
                failed_units: 0,
                linked: false,
            }],
            None,
        );
        assert!((one.completed - 11.0).abs() < 1e-9);
    }

    #[test]
    fn own_and_linked_funders_are_named() {
        let r = AgentRecord {
            completed: 4,
            weight: Evidence {
                completed: 2.5,
                funders: 3,
                linked_funders: 1,
                own: 2.0,
                ..Evidence::default()
            },
            ..AgentRecord::default()
        };
        assert_eq!(
            record_words(&r),
            "4/4 settled, weighing 2.5 from 3 funders (2.0 your own, 1 paid by the agent)"
        );
        assert!((r.reliability() - 4.5 / 5.5).abs() < 1e-12);
    }

    #[test]
    fn no_offers_no_choice() {
        for policy in [Selection::Cheapest, Selection::Reliable, Selection::Balanced] {
            assert_eq!(select(0, policy, &[], none()), None);
            assert!(explain(policy, &[], none()).is_empty());
        }
    }

    #[test]
    fn the_ranking_says_why_each_stands_below_the_one_above() {
        let good = offer(B, 420_000, rec(19, 0, 1, Some(60)));
        let poor = offer(A, 350_000, rec(1, 0, 4, None));
        let new = offer(C, 500_000, NEW);
        let paused = Offer { active: false, ..offer(Address::repeat_byte(9), 1, NEW) };
        let all = [poor, new, good, paused];
        let ranking = explain(Selection::Balanced, &all, none());
        let order: Vec<Address> = ranking.iter().map(|r| r.agent).collect();
        // 0.91·0.97·0.83 = 0.73 > 0.67·0.9·0.7 = 0.42 > 0.38·0.9 = 0.34.
        assert_eq!(order, [B, C, A], "{ranking:#?}");
        assert_eq!(ranking.iter().map(|r| r.rank).collect::<Vec<_>>(), [1, 2, 3]);
        // The first reads as the choice does, the second as its runner-up.
        let choice = select(0, Selection::Balanced, &all, none()).unwrap();
        assert_eq!(ranking[0].reason, choice.reason);
        assert_eq!(ranking[0].score_bps, choice.score_bps);
        assert_eq!(ranking[0].below, None);
        assert_eq!(ranking[1].reason, choice.runner_up.unwrap().reason);
        assert_eq!(ranking[1].below, Some(B));
        // The third is explained against the second, not the first.
        assert_eq!(ranking[2].below, Some(C));
        assert!(ranking[2].reason.starts_with("less reliable:"), "{}", ranking[2].reason);
        assert!(ranking[2].reason.contains("1/5 settled, 4 expired"), "{}", ranking[2].reason);
        assert_eq!(ranking[2].record, "1/5 settled, 4 expired");
        assert_eq!(ranking[1].record, "no settled tasks yet");
        assert!((ranking[2].price_factor - 1.0).abs() < 1e-12, "the cheapest");
        assert!((ranking[1].price_factor - 0.7).abs() < 1e-12);
        assert!((ranking[1].reliability - 2.0 / 3.0).abs() < 1e-12);
        assert!((ranking[1].latency - 0.9).abs() < 1e-12);
        assert!(ranking.windows(2).all(|w| w[0].score_bps >= w[1].score_bps));
        // Cheapest ranks by price alone, each dearer than the one above.
        let cheapest = explain(Selection::Cheapest, &all, none());
        assert_eq!(cheapest.iter().map(|r| r.agent).collect::<Vec<_>>(), [A, B, C]);
        assert!(cheapest[0].reason.starts_with("cheapest: 0.35 USDC, the lowest of 3 offers"));
        assert!(cheapest[2].reason.starts_with("dearer: 0.50 USDC against 0.42 USDC"));
        // The JSON the API answers: prices in base units.
        let json = serde_json::to_value(&ranking[1]).unwrap();
        assert_eq!(json["price"], 500_000);
        assert_eq!(json["below"], B.to_string());
        assert_eq!(json["rank"], 2);
    }

    #[test]
    fn words() {
        assert_eq!(short_usdc(usdc(400_000)), "0.40 USDC");
        assert_eq!(short_usdc(usdc(1_250_000)), "1.25 USDC");
        assert_eq!(short_usdc(usdc(1)), "0.000001 USDC");
        assert_eq!(short_usdc(usdc(12_000_000)), "12.00 USDC");
        assert_eq!(record_words(&rec(3, 1, 0, None)), "3/4 settled, 1 dispute lost");
        assert_eq!(record_words(&rec(3, 2, 1, None)), "3/6 settled, 1 expired, 2 disputes lost");
        assert_eq!(duration_words(4), "4s");
        assert_eq!(duration_words(600), "10m");
        assert_eq!(duration_words(7_200), "2h");
    }

    #[test]
    fn agents_seen_working_rank_before_quiet_ones_under_every_policy() {
        // A is the cheapest and the most reliable, but quiet: B, seen
        // working, is chosen; the choice and A's place say why.
        let quiet = Offer { quiet: true, ..offer(A, 1, rec(20, 0, 0, Some(1))) };
        let live = offer(B, 5, rec(1, 0, 1, Some(900)));
        for policy in [Selection::Cheapest, Selection::Reliable, Selection::Balanced] {
            let choice = select(0, policy, &[quiet, live], none()).unwrap();
            assert_eq!(choice.executor, B, "{policy:?}");
            assert!(!choice.quiet);
            let ru = choice.runner_up.unwrap();
            assert_eq!(ru.executor, A);
            assert!(ru.reason.starts_with(QUIET_WORDS), "{}", ru.reason);
        }
        // Quiet and dearer too: both reasons.
        let dear_quiet = Offer { quiet: true, ..offer(C, 9, NEW) };
        let choice = select(0, Selection::Cheapest, &[dear_quiet, live], none()).unwrap();
        let reason = choice.runner_up.unwrap().reason;
        assert!(
            reason.starts_with(&format!(
                "{QUIET_WORDS}, unlike the one above; dearer: 0.000009 USDC against"
            )),
            "{reason}"
        );
        // Only quiet agents offer it: the best of them, and the choice says so.
        let other = Offer { quiet: true, ..offer(C, 2, NEW) };
        let choice = select(0, Selection::Cheapest, &[quiet, other], none()).unwrap();
        assert_eq!(choice.executor, A);
        assert!(choice.quiet);
        assert!(choice.reason.ends_with(QUIET_WORDS), "{}", choice.reason);
        // Recent means within a day of chain time.
        let seen = AgentRecord { last_active_at: Some(1_000), ..NEW };
        assert!(seen.seen_recently(1_000 + tessera_records::RECENT_SECS));
        assert!(!seen.seen_recently(1_001 + tessera_records::RECENT_SECS));
        assert!(!NEW.seen_recently(0));
    }
}
