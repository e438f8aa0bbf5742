//! The math functions of [`super::Expr`] over `double precision` (`sqrt`, `power`, `ln`,
//! the trigonometric family ...), with PostgreSQL's errors for arguments outside their
//! domain and results out of range. An integer argument is read as a double, as
//! PostgreSQL resolves these calls; a `numeric` one is refused where they are bound
//! (bind/call.rs), since PostgreSQL computes those in `numeric`, to digits of its own.

use permafrost_types::Value;

use crate::error::{Result, SqlError};

/// A math function of one or two doubles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathFunc {
    Sqrt,
    Cbrt,
    Exp,
    Ln,
    Log10,
    Power,
    Degrees,
    Radians,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Atan2,
}

impl MathFunc {
    /// The function of PostgreSQL name `name`.
    pub fn named(name: &str) -> Option<MathFunc> {
        Some(match name {
            "sqrt" => MathFunc::Sqrt,
            "cbrt" => MathFunc::Cbrt,
            "exp" => MathFunc::Exp,
            "ln" => MathFunc::Ln,
            "log" | "log10" => MathFunc::Log10,
            "power" | "pow" => MathFunc::Power,
            "degrees" => MathFunc::Degrees,
            "radians" => MathFunc::Radians,
            "sin" => MathFunc::Sin,
            "cos" => MathFunc::Cos,
            "tan" => MathFunc::Tan,
            "cot" => MathFunc::Cot,
            "asin" => MathFunc::Asin,
            "acos" => MathFunc::Acos,
            "atan" => MathFunc::Atan,
            "atan2" => MathFunc::Atan2,
            _ => return None,
        })
    }

    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            MathFunc::Power | MathFunc::Atan2 => 2,
            _ => 1,
        }
    }
}

fn math(sqlstate: &'static str, message: &'static str) -> SqlError {
    SqlError::Math { sqlstate, message }
}

/// A result PostgreSQL checks: infinite from finite arguments is an overflow, zero from a
/// non-zero one (where `underflow_checked`) an underflow, both 22003.
fn checked(r: f64, args_finite: bool, underflow: bool) -> Result<Value> {
    if r.is_infinite() && args_finite {
        return Err(math("22003", "value out of range: overflow"));
    }
    if underflow {
        return Err(math("22003", "value out of range: underflow"));
    }
    Ok(Value::Double(r))
}

/// `f(x)` (`f(x, y)`).
pub fn eval(f: MathFunc, x: f64, y: f64) -> Result<Value> {
    let finite = x.is_finite() && (f.arity() == 1 || y.is_finite());
    let r = match f {
        MathFunc::Sqrt if x < 0.0 => return Err(math("2201F", "cannot take square root of a negative number")),
        MathFunc::Sqrt => x.sqrt(),
        MathFunc::Cbrt => x.cbrt(),
        MathFunc::Exp => {
            let r = x.exp();
            return checked(r, finite, r == 0.0 && finite);
        }
        MathFunc::Ln | MathFunc::Log10 if x == 0.0 => return Err(math("2201E", "cannot take logarithm of zero")),
        MathFunc::Ln | MathFunc::Log10 if x < 0.0 => {
            return Err(math("2201E", "cannot take logarithm of a negative number"));
        }
        MathFunc::Ln => x.ln(),
        MathFunc::Log10 => x.log10(),
        MathFunc::Power => {
            if x == 0.0 && y < 0.0 {
                return Err(math("2201F", "zero raised to a negative power is undefined"));
            }
            if x < 0.0 && y.is_finite() && y.fract() != 0.0 {
                return Err(math(
                    "2201F",
                    "a negative number raised to a non-integer power yields a complex result",
                ));
            }
            let r = x.powf(y);
            return checked(r, finite, r == 0.0 && x != 0.0 && finite);
        }
        MathFunc::Degrees => x.to_degrees(),
        MathFunc::Radians => x.to_radians(),
        MathFunc::Sin | MathFunc::Cos | MathFunc::Tan | MathFunc::Cot if x.is_infinite() => {
            return Err(math("22003", "input is out of range"));
        }
        MathFunc::Sin => x.sin(),
        MathFunc::Cos => x.cos(),
        MathFunc::Tan => x.tan(),
        MathFunc::Cot => 1.0 / x.tan(),
        MathFunc::Asin | MathFunc::Acos if !(-1.0..=1.0).contains(&x) => {
            return Err(math("22003", "input is out of range"));
        }
        MathFunc::Asin => x.asin(),
        MathFunc::Acos => x.acos(),
        MathFunc::Atan => x.atan(),
        MathFunc::Atan2 => x.atan2(y),
    };
    checked(r, finite, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(f: MathFunc, x: f64, y: f64) -> f64 {
        match eval(f, x, y).unwrap() {
            Value::Double(d) => d,
            v => panic!("not a double: {v:?}"),
        }
    }

    fn state(f: MathFunc, x: f64, y: f64) -> &'static str {
        eval(f, x, y).unwrap_err().sqlstate()
    }

    #[test]
    fn values_and_errors_are_postgresql_s() {
        assert_eq!(d(MathFunc::Sqrt, 16.0, 0.0), 4.0);
        assert_eq!(d(MathFunc::Power, 2.0, 10.0), 1024.0);
        assert_eq!(d(MathFunc::Power, -8.0, 3.0), -512.0);
        assert_eq!(d(MathFunc::Log10, 1000.0, 0.0), 3.0);
        assert_eq!(d(MathFunc::Cbrt, 27.0, 0.0), 3.0);
        assert_eq!(state(MathFunc::Sqrt, -1.0, 0.0), "2201F");
        assert_eq!(state(MathFunc::Ln, 0.0, 0.0), "2201E");
        assert_eq!(state(MathFunc::Log10, -2.0, 0.0), "2201E");
        assert_eq!(state(MathFunc::Power, 0.0, -1.0), "2201F");
        assert_eq!(state(MathFunc::Power, -8.0, 0.5), "2201F");
        assert_eq!(state(MathFunc::Power, 10.0, 400.0), "22003");
        assert_eq!(state(MathFunc::Exp, 1000.0, 0.0), "22003");
        assert_eq!(state(MathFunc::Exp, -1000.0, 0.0), "22003");
        assert_eq!(state(MathFunc::Asin, 2.0, 0.0), "22003");
        // Infinities in, infinities out, as PostgreSQL gives them.
        assert_eq!(d(MathFunc::Sqrt, f64::INFINITY, 0.0), f64::INFINITY);
        assert_eq!(d(MathFunc::Exp, f64::NEG_INFINITY, 0.0), 0.0);
    }
}
