//! Verdicts and the judges that reach them: the offline rubric, or a council
//! model through async-openai. A council that fails twice decides for the
//! client (a refund) on a dispute, and upholds the appealed ruling on an
//! appeal: every dispute ends.

use serde::{Deserialize, Serialize};

use crate::{council::Council, evidence::Evidence, rubric};

/// Basis points of the whole amount.
pub const BPS: u16 = 10_000;

/// Who the ruling favours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// The executor is paid in full.
    Worker,
    /// The funder is refunded in full.
    Client,
    /// The amount is split.
    Split,
}

impl VerdictKind {
    /// Every kind.
    pub const ALL: [VerdictKind; 3] =
        [VerdictKind::Worker, VerdictKind::Client, VerdictKind::Split];

    /// The kind's name, as serialized and stored (`worker`, `client`, `split`).
    pub const fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Worker => "worker",
            VerdictKind::Client => "client",
            VerdictKind::Split => "split",
        }
    }
}

impl std::fmt::Display for VerdictKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// Text that names no verdict kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a verdict (worker, client or split)")]
pub struct UnknownVerdict(pub String);

impl std::str::FromStr for VerdictKind {
    type Err = UnknownVerdict;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownVerdict(s.to_owned()))
    }
}

/// A ruling with its reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Who it favours.
    pub verdict: VerdictKind,
    /// Executor's share in basis points: 10000 for worker, 0 for client,
    /// strictly between for a split.
    pub executor_share_bps: u16,
    /// Why, in plain words.
    pub rationale: String,
    /// Which judge decided (`offline-rubric`, `council:<model>`, `fallback`).
    pub judge: String,
    /// What the judge noticed on the way (e.g. `prompt_injection`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

impl Verdict {
    /// A verdict whose share agrees with its kind.
    pub fn new(
        verdict: VerdictKind,
        share: u16,
        rationale: impl Into<String>,
        judge: &str,
    ) -> Self {
        let executor_share_bps = match verdict {
            VerdictKind::Worker => BPS,
            VerdictKind::Client => 0,
            VerdictKind::Split => share.clamp(1, BPS - 1),
        };
        Self {
            verdict,
            executor_share_bps,
            rationale: rationale.into(),
            judge: judge.to_owned(),
            flags: Vec::new(),
        }
    }

    /// The verdict for a share: 10000 → worker, 0 → client, else split.
    pub fn from_share(share: u16, rationale: impl Into<String>, judge: &str) -> Self {
        let kind = match share {
            0 => VerdictKind::Client,
            s if s >= BPS => VerdictKind::Worker,
            _ => VerdictKind::Split,
        };
        Self::new(kind, share, rationale, judge)
    }
}

/// Who decides.
#[derive(Debug, Clone)]
pub enum Judge {
    /// The deterministic rubric (no key, no network).
    Offline,
    /// A council model, with the rubric's flags attached.
    Council(Box<Council>),
}

impl Judge {
    /// From the environment: the council when an LLM key is set, else offline.
    pub fn from_env() -> Self {
        Council::from_env().map_or(Self::Offline, |c| Self::Council(Box::new(c)))
    }

    /// Decides a dispute or an appeal (the evidence says which). Never
    /// fails: a council that fails twice rules as [`fallback`] says.
    pub async fn decide(&self, evidence: &Evidence) -> Verdict {
        match self {
            Self::Offline => rubric::judge(evidence),
            Self::Council(council) => match council.decide(evidence).await {
                Ok(mut v) => {
                    // A result that tries to instruct the judge is flagged
                    // whatever the council says.
                    if let Some(flag) = rubric::injection(evidence) {
                        v.flags.push(flag);
                    }
                    v
                }
                Err(failures) => fallback(evidence, &failures),
            },
        }
    }
}

/// The verdict when the council failed (twice, or once when the provider
/// refused the key or the request; `failures` says how): a
/// dispute refunds the funder; an appeal upholds the appealed ruling, as the
/// escrow would once the appeal ruling window passed.
pub fn fallback(evidence: &Evidence, failures: &str) -> Verdict {
    let mut v = match &evidence.appeal {
        None => Verdict::new(
            VerdictKind::Client,
            0,
            format!("The council failed ({failures}); the funder is refunded."),
            "fallback",
        ),
        Some(a) => Verdict::from_share(
            a.ruling_share_bps,
            format!("The council failed ({failures}); the appealed ruling stands."),
            "fallback",
        ),
    };
    v.flags.push("council_failed".into());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_agree_with_kinds() {
        assert_eq!(Verdict::new(VerdictKind::Worker, 3, "", "t").executor_share_bps, 10_000);
        assert_eq!(Verdict::new(VerdictKind::Client, 3, "", "t").executor_share_bps, 0);
        assert_eq!(Verdict::new(VerdictKind::Split, 0, "", "t").executor_share_bps, 1);
        assert_eq!(Verdict::new(VerdictKind::Split, 10_000, "", "t").executor_share_bps, 9_999);
        assert_eq!(Verdict::from_share(0, "", "t").verdict, VerdictKind::Client);
        for kind in VerdictKind::ALL {
            let text = kind.as_str();
            assert_eq!(serde_json::to_value(kind).unwrap(), text, "serde and text agree");
            assert_eq!(text.parse::<VerdictKind>(), Ok(kind));
        }
        assert!("Worker".parse::<VerdictKind>().is_err());
        assert_eq!(Verdict::from_share(10_000, "", "t").verdict, VerdictKind::Worker);
        assert_eq!(Verdict::from_share(3_333, "", "t").verdict, VerdictKind::Split);
    }

    #[test]
    fn a_failed_council_refunds_a_dispute_and_upholds_an_appealed_ruling() {
        let mut e = Evidence {
            task_id: "1".into(),
            capability: None,
            spec: String::new(),
            material: String::new(),
            result: None,
            reason: String::new(),
            problems: vec![],
            appeal: None,
        };
        let v = fallback(&e, "timeout; timeout");
        assert_eq!((v.verdict, v.executor_share_bps), (VerdictKind::Client, 0));
        assert_eq!(v.flags, ["council_failed"]);
        for (share, kind) in
            [(0, VerdictKind::Client), (4_200, VerdictKind::Split), (BPS, VerdictKind::Worker)]
        {
            e.appeal = Some(crate::evidence::AppealEvidence {
                appellant: crate::evidence::Appellant::Client,
                reason: "too generous".into(),
                ruling_share_bps: share,
                ruling_rationale: String::new(),
            });
            let v = fallback(&e, "timeout; timeout");
            assert_eq!((v.verdict, v.executor_share_bps), (kind, share));
            assert!(v.rationale.contains("the appealed ruling stands"), "{}", v.rationale);
            assert_eq!(
                (v.judge.as_str(), v.flags.as_slice()),
                ("fallback", &["council_failed".to_owned()][..])
            );
        }
    }
}
