//! USDC amounts: one type for every amount Tessera reads, writes, stores or
//! shows, so parsing, formatting and range rules are the same everywhere.
//!
//! - Text: [`Usdc::parse`] reads a decimal amount in whole USDC with at most
//!   six decimals, optionally followed by `USDC` (`"1.2"`, `"0.25 USDC"`,
//!   `"3"`); [`Display`](fmt::Display) writes exactly six decimals
//!   (`1.200000`), and [`Usdc::with_unit`] appends ` USDC`. The web script's
//!   `usdc()` follows the same rule.
//! - Serde: an amount serializes as a JSON **string of base units**
//!   (`"1200000"`), which survives JavaScript's 53-bit numbers; it reads
//!   either such a string or a non-negative JSON integer of base units.
//! - Ranges: nothing is clamped. Converting to a narrower type (the
//!   escrow's `uint96`, a database `BIGINT`) fails with [`UsdcError::Range`].

use std::{fmt, str::FromStr};

use alloy::primitives::U256;
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// Decimals of USDC.
pub const DECIMALS: u32 = 6;

/// Base units in one USDC.
pub const UNIT: u128 = 1_000_000;

/// An amount of USDC, in base units (`1 USDC = 1_000_000`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usdc(u128);

/// Why text or a number is not a USDC amount Tessera can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsdcError {
    /// Not a decimal number (optionally followed by `USDC`).
    #[error("{0:?} is not a USDC amount; write a decimal like 0.25 or 12")]
    Syntax(String),
    /// More than six decimals: finer than one base unit.
    #[error("{0:?} has more than 6 decimals, finer than one USDC base unit")]
    Precision(String),
    /// Does not fit the type it is read into or converted to.
    #[error("{amount} does not fit {target}")]
    Range {
        /// The amount, as text.
        amount: String,
        /// What it had to fit.
        target: &'static str,
    },
}

impl Usdc {
    /// No USDC.
    pub const ZERO: Self = Self(0);

    /// An amount of `units` base units.
    pub const fn from_base_units(units: u128) -> Self {
        Self(units)
    }

    /// An amount of whole USDC.
    pub const fn from_whole(usdc: u64) -> Self {
        Self(usdc as u128 * UNIT)
    }

    /// The amount in base units.
    pub const fn base_units(self) -> u128 {
        self.0
    }

    /// Reads `1.2`, `1.200000`, `0.25 USDC`, `.5` or `3` (whole USDC with at
    /// most six decimals).
    pub fn parse(text: &str) -> Result<Self, UsdcError> {
        let t = text.trim();
        let t = t.strip_suffix("USDC").or_else(|| t.strip_suffix("usdc")).map_or(t, str::trim_end);
        let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && frac.is_empty()) || !digits(whole) || !digits(frac) {
            return Err(UsdcError::Syntax(text.to_owned()));
        }
        if frac.len() > DECIMALS as usize {
            return Err(UsdcError::Precision(text.to_owned()));
        }
        let range = || UsdcError::Range { amount: text.trim().to_owned(), target: "128 bits" };
        let whole: u128 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| range())? };
        let frac: u128 = format!("{frac:0<6}").parse().map_err(|_| range())?;
        whole.checked_mul(UNIT).and_then(|w| w.checked_add(frac)).map(Self).ok_or_else(range)
    }

    /// Reads a string of base units (`"1200000"`), as the APIs write them.
    pub fn parse_base_units(text: &str) -> Result<Self, UsdcError> {
        let t = text.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(UsdcError::Syntax(text.to_owned()));
        }
        t.parse()
            .map(Self)
            .map_err(|_| UsdcError::Range { amount: t.to_owned(), target: "128 bits" })
    }

    /// The amount followed by ` USDC` (`1.200000 USDC`).
    pub fn with_unit(self) -> impl fmt::Display {
        WithUnit(self)
    }

    /// `self + other`, `None` on overflow.
    pub fn checked_add(self, other: Self) -> Option<Self> {
        self.0.checked_add(other.0).map(Self)
    }

    /// `self - other`, `None` below zero.
    pub fn checked_sub(self, other: Self) -> Option<Self> {
        self.0.checked_sub(other.0).map(Self)
    }

    /// The sum of `amounts`, `None` on overflow.
    pub fn sum<I: IntoIterator<Item = Self>>(amounts: I) -> Option<Self> {
        amounts.into_iter().try_fold(Self::ZERO, Self::checked_add)
    }

    /// The amount as an on-chain `uint256`.
    pub fn to_u256(self) -> U256 {
        U256::from(self.0)
    }

    /// An on-chain amount; an error past 128 bits.
    pub fn from_u256(value: U256) -> Result<Self, UsdcError> {
        u128::try_from(value)
            .map(Self)
            .map_err(|_| UsdcError::Range { amount: value.to_string(), target: "128 bits" })
    }

    /// The amount as a database `BIGINT`; an error past `i64::MAX` (never
    /// clamped).
    pub fn to_i64(self) -> Result<i64, UsdcError> {
        i64::try_from(self.0)
            .map_err(|_| UsdcError::Range { amount: self.to_string(), target: "a 64-bit column" })
    }

    /// An amount read back from a database `BIGINT`; negative is an error.
    pub fn from_i64(value: i64) -> Result<Self, UsdcError> {
        u128::try_from(value)
            .map(Self)
            .map_err(|_| UsdcError::Range { amount: value.to_string(), target: "an amount" })
    }
}

impl fmt::Display for Usdc {
    /// Exactly six decimals: `1.200000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06}", self.0 / UNIT, self.0 % UNIT)
    }
}

struct WithUnit(Usdc);

impl fmt::Display for WithUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} USDC", self.0)
    }
}

impl FromStr for Usdc {
    type Err = UsdcError;

    /// Same as [`Usdc::parse`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl From<Usdc> for U256 {
    fn from(value: Usdc) -> Self {
        value.to_u256()
    }
}

impl Serialize for Usdc {
    /// A string of base units: `"1200000"`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Usdc {
    /// A string of base units or a non-negative integer of base units.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl de::Visitor<'_> for Visitor {
            type Value = Usdc;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a USDC amount in base units (an integer, or a string of digits)")
            }

            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Usdc, E> {
                Ok(Usdc(u128::from(v)))
            }

            fn visit_u128<E: de::Error>(self, v: u128) -> Result<Usdc, E> {
                Ok(Usdc(v))
            }

            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Usdc, E> {
                u128::try_from(v)
                    .map(Usdc)
                    .map_err(|_| E::custom(format!("amount {v} is negative")))
            }

            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Usdc, E> {
                Err(E::custom(format!(
                    "amount {v} is not an integer number of base units (1 USDC = 1000000)"
                )))
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Usdc, E> {
                Usdc::parse_base_units(v).map_err(E::custom)
            }
        }

        deserializer.deserialize_any(Visitor)
    }
}

/// Serde for amounts written as JSON **integers** of base units, where a
/// format predates [`Usdc`] (plan files: `"cost": 400000`); reads what
/// [`Usdc`]'s own `Deserialize` reads. Use with `#[serde(with = "…")]`.
pub mod as_integer {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Usdc;

    /// Writes the base units as an integer.
    pub fn serialize<S: Serializer>(amount: &Usdc, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u128(amount.base_units())
    }

    /// Reads an integer or a string of base units.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Usdc, D::Error> {
        Usdc::deserialize(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_decimal_text() {
        let ok = [
            ("1.2", 1_200_000),
            ("1.200000", 1_200_000),
            ("0.25 USDC", 250_000),
            ("3", 3_000_000),
            (".5", 500_000),
            ("  7usdc ", 7_000_000),
            ("0.000001", 1),
        ];
        for (text, units) in ok {
            assert_eq!(Usdc::parse(text), Ok(Usdc::from_base_units(units)), "{text}");
        }
        for bad in ["", ".", "abc", "1.2.3", "-1", "1e6", "1,5", "USDC"] {
            assert!(matches!(Usdc::parse(bad), Err(UsdcError::Syntax(_))), "{bad}");
        }
        assert!(matches!(Usdc::parse("0.0000001"), Err(UsdcError::Precision(_))));
        assert!(matches!(Usdc::parse(&"9".repeat(40)), Err(UsdcError::Range { .. })));
    }

    #[test]
    fn formats_six_decimals_and_round_trips() {
        assert_eq!(Usdc::from_base_units(2_500_000).to_string(), "2.500000");
        assert_eq!(Usdc::from_base_units(7).to_string(), "0.000007");
        assert_eq!(Usdc::ZERO.to_string(), "0.000000");
        assert_eq!(Usdc::from_whole(40).with_unit().to_string(), "40.000000 USDC");
        for units in [0, 1, 999_999, 1_000_000, 123_456_789, u128::MAX] {
            let a = Usdc::from_base_units(units);
            assert_eq!(Usdc::parse(&a.to_string()), Ok(a));
            assert_eq!(Usdc::parse(&a.with_unit().to_string()), Ok(a));
        }
    }

    #[test]
    fn serde_uses_base_unit_strings_and_reads_integers() {
        let a = Usdc::from_base_units(1_200_000);
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"1200000\"");
        assert_eq!(serde_json::from_str::<Usdc>("\"1200000\"").unwrap(), a);
        assert_eq!(serde_json::from_str::<Usdc>("1200000").unwrap(), a);
        let max = Usdc::from_base_units(u128::MAX);
        assert_eq!(
            serde_json::from_str::<Usdc>(&serde_json::to_string(&max).unwrap()).unwrap(),
            max
        );
        for bad in ["-1", "1.5", "\"1.5\"", "\"\"", "\"0x10\"", "null"] {
            assert!(serde_json::from_str::<Usdc>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn integer_form_writes_numbers_and_reads_both() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Cost {
            #[serde(with = "super::as_integer")]
            cost: Usdc,
        }
        let c = Cost { cost: Usdc::from_base_units(400_000) };
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"cost":400000}"#);
        assert_eq!(serde_json::from_str::<Cost>(r#"{"cost":"400000"}"#).unwrap(), c);
        assert!(serde_json::from_str::<Cost>(r#"{"cost":-1}"#).is_err());
    }

    #[test]
    fn narrowing_is_an_error_not_a_clamp() {
        assert_eq!(Usdc::from_base_units(5).to_i64(), Ok(5));
        assert!(matches!(
            Usdc::from_base_units(i64::MAX as u128 + 1).to_i64(),
            Err(UsdcError::Range { .. })
        ));
        assert!(Usdc::from_i64(-1).is_err());
        assert!(Usdc::from_u256(U256::MAX).is_err());
        assert_eq!(Usdc::from_u256(U256::from(9u8)), Ok(Usdc::from_base_units(9)));
        assert_eq!(Usdc::sum([Usdc::from_base_units(u128::MAX), Usdc::from_base_units(1)]), None);
        assert_eq!(Usdc::from_base_units(1).checked_sub(Usdc::from_base_units(2)), None);
    }
}
