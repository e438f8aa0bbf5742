//! Evaluation of expressions (crate::expr): unit tests.

use super::*;
use permafrost_types::Numeric;

fn c(v: impl Into<Value>) -> Expr {
    Expr::Const(v.into())
}

fn eval(e: &Expr) -> Value {
    e.eval_const(&Cx::new(&[], 0)).unwrap()
}

#[test]
fn three_valued_logic() {
    let null = Expr::Const(Value::Null);
    let t = c(true);
    let f = c(false);
    assert_eq!(
        eval(&Expr::And(null.clone().boxed(), f.clone().boxed())),
        Value::Bool(false)
    );
    assert_eq!(eval(&Expr::And(null.clone().boxed(), t.clone().boxed())), Value::Null);
    assert_eq!(eval(&Expr::Or(null.clone().boxed(), t.boxed())), Value::Bool(true));
    assert_eq!(eval(&Expr::Or(null.clone().boxed(), f.boxed())), Value::Null);
    let in_list = Expr::InList {
        expr: c(3).boxed(),
        list: vec![c(1), null],
        negated: true,
    };
    assert_eq!(eval(&in_list), Value::Null);
}

#[test]
fn arithmetic_follows_postgres_types() {
    let div = |a: Value, b: Value| arith(ArithOp::Div, a.as_ref(), b.as_ref());
    assert_eq!(div(Value::Int(7), Value::Int(2)).unwrap(), Value::Int(3));
    assert_eq!(div(Value::Int(7), Value::Double(2.0)).unwrap(), Value::Double(3.5));
    assert_eq!(div(Value::Int(1), Value::Int(0)).unwrap_err().sqlstate(), "22012");
    assert_eq!(
        arith(ArithOp::Add, ValueRef::Int(i64::MAX), ValueRef::Int(1))
            .unwrap_err()
            .sqlstate(),
        "22003"
    );
    let d = arith(
        ArithOp::Mul,
        ValueRef::Decimal(Numeric::new(150, 2).as_ref()),
        ValueRef::Int(2),
    )
    .unwrap();
    assert_eq!(d.to_string(), "3.00");
    // Past 28 digits, exactly; division at PostgreSQL's scale; 22012.
    let big: Numeric = "12345678901234567890123456789".parse().unwrap();
    let d = arith(ArithOp::Mul, ValueRef::Decimal(big.as_ref()), ValueRef::Int(1000)).unwrap();
    assert_eq!(d.to_string(), "12345678901234567890123456789000");
    let q = arith(
        ArithOp::Div,
        ValueRef::Decimal(Numeric::new(1, 0).as_ref()),
        ValueRef::Int(3),
    )
    .unwrap();
    assert_eq!(q.to_string(), "0.33333333333333333333");
    let e = arith(ArithOp::Div, ValueRef::Decimal(big.as_ref()), ValueRef::Int(0)).unwrap_err();
    assert_eq!(e.sqlstate(), "22012");
}

#[test]
fn text_compares_as_the_other_side_s_type() {
    assert_eq!(
        compare(ValueRef::Int(10), ValueRef::Text("9")).unwrap(),
        Some(Ordering::Greater)
    );
    assert!(compare(ValueRef::Int(10), ValueRef::Text("x")).is_err());
}
