//! DWARF expressions in CFI, translated to Breakpad postfix: tokens, which
//! [`crate::breakpad::cfi`] writes.
//!
//! Evaluated symbolically: constants fold, a register read becomes `$reg`, a
//! dereference `... ^`. That covers what compilers emit (`DW_OP_breg*`, constants,
//! plus/minus, deref, and masks that realign the stack), and also the x86_64 PLT's CFA,
//! which reads the program counter: given the address it folds to a plain `$rsp N +`.
//! Anything else (branches, typed stack, TLS) is reported as not expressible.

use gimli::{Encoding, Expression, Operation, Reader, ReaderOffset};

use super::regs::{CfiArch, Numbering};
use crate::model::cfi::Token;

/// Longest expression evaluated, and deepest stack: real CFI expressions have a handful
/// of operations; damaged ones must not run long.
const MAX_OPS: usize = 128;
const MAX_STACK: usize = 64;
/// Longest postfix one value may render to. `DW_OP_dup` then `DW_OP_plus` doubles a
/// symbolic value, so a few dozen operations could otherwise spell gigabytes; real
/// rules are a few dozen bytes.
const MAX_POSTFIX: usize = 1024;

/// Why an expression has no postfix form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExprError {
    /// It reads the program counter: it has a value only at a given address.
    NeedsPc,
    /// It uses something postfix cannot say.
    Unsupported(String),
}

/// A value on the symbolic stack: a constant, or `base + offset` with `base` a postfix
/// expression.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Const(i64),
    Linear { base: Vec<Token>, offset: i64 },
}

impl Value {
    fn render(self) -> Vec<Token> {
        match self {
            Value::Const(c) if c >= 0 => vec![Token::Num(c as u64)],
            Value::Const(c) => vec![Token::Num(0), Token::Num(c.unsigned_abs()), Token::Op("-")],
            Value::Linear { mut base, offset } => {
                push_offset(&mut base, offset);
                base
            }
        }
    }

    /// A register or `.cfa`.
    fn name(name: &'static str) -> Value {
        Value::Linear {
            base: vec![Token::Name(name)],
            offset: 0,
        }
    }

    /// `a b op`, of two values rendered.
    fn binary(a: Value, b: Value, op: &'static str) -> Value {
        let mut base = a.render();
        base.extend(b.render());
        base.push(Token::Op(op));
        Value::Linear { base, offset: 0 }
    }
}

/// `N +` or `N -` after a value, for a non-zero offset.
fn push_offset(tokens: &mut Vec<Token>, offset: i64) {
    if offset != 0 {
        tokens.push(Token::Num(offset.unsigned_abs()));
        tokens.push(Token::Op(if offset > 0 { "+" } else { "-" }));
    }
}

/// The length of `tokens` as text, a space apart.
fn text_len(tokens: &[Token]) -> usize {
    tokens
        .iter()
        .map(|t| t.len() + 1)
        .sum::<usize>()
        .saturating_sub(1)
}

/// What an expression is evaluated against.
pub struct ExprContext {
    pub arch: CfiArch,
    pub numbering: Numbering,
    pub encoding: Encoding,
    /// The address the row applies at, for expressions that read the program counter.
    pub pc: Option<u64>,
}

/// Translates `expr` to postfix. `push_cfa` starts the stack with the CFA, as
/// `DW_CFA_expression` and `DW_CFA_val_expression` do.
#[allow(
    clippy::too_many_lines,
    reason = "the DWARF expression translator: one `match` over the operations"
)]
pub fn translate<R: Reader>(
    expr: Expression<R>,
    cx: &ExprContext,
    push_cfa: bool,
) -> Result<Vec<Token>, ExprError> {
    let unsupported = |what: &str| Err(ExprError::Unsupported(what.to_string()));
    let mut stack: Vec<Value> = Vec::new();
    if push_cfa {
        stack.push(Value::name(".cfa"));
    }
    let mut ops = expr.operations(cx.encoding);
    let mut count = 0;
    loop {
        let op = match ops.next() {
            Ok(Some(op)) => op,
            Ok(None) => break,
            Err(e) => return Err(ExprError::Unsupported(format!("malformed expression: {e}"))),
        };
        count += 1;
        if count > MAX_OPS || stack.len() > MAX_STACK {
            return unsupported("expression too long");
        }
        match op {
            Operation::RegisterOffset {
                register,
                offset,
                base_type,
            } => {
                if base_type.0.into_u64() != 0 {
                    return unsupported("typed register read");
                }
                if Some(register.0) == cx.arch.pc_register() {
                    let pc = cx.pc.ok_or(ExprError::NeedsPc)?;
                    stack.push(Value::Const((pc as i64).wrapping_add(offset)));
                } else {
                    let Some(name) = cx.arch.name(cx.numbering, register.0) else {
                        return Err(ExprError::Unsupported(format!(
                            "unknown register {}",
                            register.0
                        )));
                    };
                    stack.push(Value::Linear {
                        base: vec![Token::Name(name)],
                        offset,
                    });
                }
            }
            Operation::UnsignedConstant { value } => stack.push(Value::Const(value as i64)),
            Operation::SignedConstant { value } => stack.push(Value::Const(value)),
            Operation::PlusConstant { value } => {
                let a = pop(&mut stack)?;
                stack.push(add(a, Value::Const(value as i64)));
            }
            Operation::Plus => {
                let (a, b) = pop2(&mut stack)?;
                stack.push(add(a, b));
            }
            Operation::Minus => {
                let (a, b) = pop2(&mut stack)?;
                stack.push(match (a, b) {
                    (Value::Const(x), Value::Const(y)) => Value::Const(x.wrapping_sub(y)),
                    (a, Value::Const(y)) => add(a, Value::Const(y.wrapping_neg())),
                    (a, b) => Value::binary(a, b, "-"),
                });
            }
            Operation::Mul => {
                let (a, b) = pop2(&mut stack)?;
                stack.push(match (a, b) {
                    (Value::Const(x), Value::Const(y)) => Value::Const(x.wrapping_mul(y)),
                    (a, b) => Value::binary(a, b, "*"),
                });
            }
            Operation::And => {
                let (a, b) = pop2(&mut stack)?;
                stack.push(match (a, b) {
                    (Value::Const(x), Value::Const(y)) => Value::Const(x & y),
                    // `x & -2^k` aligns down: Breakpad's `@` operator.
                    (a, Value::Const(mask)) | (Value::Const(mask), a)
                        if mask < 0 && (mask.unsigned_abs()).is_power_of_two() =>
                    {
                        let mut base = a.render();
                        base.extend([Token::Num(mask.unsigned_abs()), Token::Op("@")]);
                        Value::Linear { base, offset: 0 }
                    }
                    _ => return unsupported("DW_OP_and of registers"),
                });
            }
            Operation::Deref {
                size,
                space,
                base_type,
            } => {
                if space || base_type.0.into_u64() != 0 || size != cx.encoding.address_size {
                    return unsupported("sized or typed dereference");
                }
                let mut base = pop(&mut stack)?.render();
                base.push(Token::Op("^"));
                stack.push(Value::Linear { base, offset: 0 });
            }
            Operation::Drop => {
                pop(&mut stack)?;
            }
            Operation::Pick { index } => {
                let i = stack
                    .len()
                    .checked_sub(1 + usize::from(index))
                    .ok_or_else(|| ExprError::Unsupported("stack underflow".into()))?;
                stack.push(stack[i].clone());
            }
            Operation::Swap => {
                let (a, b) = pop2(&mut stack)?;
                stack.push(b);
                stack.push(a);
            }
            Operation::Rot => {
                let c = pop(&mut stack)?;
                let (a, b) = pop2(&mut stack)?;
                stack.push(c);
                stack.push(a);
                stack.push(b);
            }
            Operation::Nop => {}
            Operation::CallFrameCFA if push_cfa => stack.push(Value::name(".cfa")),
            op => {
                // The rest is only foldable on constants.
                let folded = fold_constant(&op, &mut stack);
                match folded {
                    Some(Ok(())) => {}
                    Some(Err(e)) => return Err(e),
                    None => return Err(ExprError::Unsupported(format!("{op:?}"))),
                }
            }
        }
        // Each operation makes at most the top value longer, from values within bounds.
        if let Some(Value::Linear { base, .. }) = stack.last()
            && text_len(base) > MAX_POSTFIX
        {
            return unsupported("expression too large");
        }
    }
    match stack.pop() {
        Some(v) => Ok(v.render()),
        None => unsupported("empty expression"),
    }
}

/// Operations with no postfix form, folded when their operands are constants (the PLT
/// expression's `and`, `ge`, `shl` on the program counter). `None` for other operations.
fn fold_constant<R: Reader>(
    op: &Operation<R>,
    stack: &mut Vec<Value>,
) -> Option<Result<(), ExprError>> {
    let unary = |stack: &mut Vec<Value>, f: fn(i64) -> i64| -> Result<(), ExprError> {
        match pop(stack)? {
            Value::Const(a) => {
                stack.push(Value::Const(f(a)));
                Ok(())
            }
            _ => Err(ExprError::Unsupported(
                "operation on a register value".into(),
            )),
        }
    };
    let binary = |stack: &mut Vec<Value>,
                  f: fn(i64, i64) -> Option<i64>|
     -> Result<(), ExprError> {
        match pop2(stack)? {
            (Value::Const(a), Value::Const(b)) => {
                let v = f(a, b).ok_or_else(|| ExprError::Unsupported("arithmetic error".into()))?;
                stack.push(Value::Const(v));
                Ok(())
            }
            _ => Err(ExprError::Unsupported(
                "operation on a register value".into(),
            )),
        }
    };
    Some(match op {
        Operation::Neg => unary(stack, i64::wrapping_neg),
        Operation::Not => unary(stack, |a| !a),
        Operation::Abs => unary(stack, i64::wrapping_abs),
        Operation::Or => binary(stack, |a, b| Some(a | b)),
        Operation::Xor => binary(stack, |a, b| Some(a ^ b)),
        Operation::Div => binary(stack, |a, b| a.checked_div(b)),
        Operation::Mod => binary(stack, |a, b| {
            (a as u64).checked_rem(b as u64).map(|v| v as i64)
        }),
        // Shift amounts are unsigned in DWARF: a "negative" one is huge, shifting all out.
        Operation::Shl => binary(stack, |a, b| Some(if b as u64 >= 64 { 0 } else { a << b })),
        Operation::Shr => binary(stack, |a, b| {
            Some(if b as u64 >= 64 {
                0
            } else {
                ((a as u64) >> b) as i64
            })
        }),
        Operation::Shra => binary(stack, |a, b| Some(a.wrapping_shr(b.clamp(0, 63) as u32))),
        Operation::Eq => binary(stack, |a, b| Some(i64::from(a == b))),
        Operation::Ne => binary(stack, |a, b| Some(i64::from(a != b))),
        Operation::Lt => binary(stack, |a, b| Some(i64::from(a < b))),
        Operation::Gt => binary(stack, |a, b| Some(i64::from(a > b))),
        Operation::Le => binary(stack, |a, b| Some(i64::from(a <= b))),
        Operation::Ge => binary(stack, |a, b| Some(i64::from(a >= b))),
        _ => return None,
    })
}

fn add(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Const(x), Value::Const(y)) => Value::Const(x.wrapping_add(y)),
        (Value::Linear { base, offset }, Value::Const(c))
        | (Value::Const(c), Value::Linear { base, offset }) => Value::Linear {
            base,
            offset: offset.wrapping_add(c),
        },
        (
            Value::Linear {
                base: mut a,
                offset: x,
            },
            Value::Linear { base: b, offset: y },
        ) => {
            a.extend(b);
            a.push(Token::Op("+"));
            Value::Linear {
                base: a,
                offset: x.wrapping_add(y),
            }
        }
    }
}

fn pop(stack: &mut Vec<Value>) -> Result<Value, ExprError> {
    stack
        .pop()
        .ok_or_else(|| ExprError::Unsupported("stack underflow".into()))
}

fn pop2(stack: &mut Vec<Value>) -> Result<(Value, Value), ExprError> {
    let b = pop(stack)?;
    let a = pop(stack)?;
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    use gimli::{EndianSlice, LittleEndian};

    fn cx(arch: CfiArch, pc: Option<u64>) -> ExprContext {
        ExprContext {
            arch,
            numbering: Numbering::Gcc,
            encoding: Encoding {
                format: gimli::Format::Dwarf32,
                version: 4,
                address_size: if arch == CfiArch::X86 { 4 } else { 8 },
            },
            pc,
        }
    }

    fn run(
        bytes: &[u8],
        arch: CfiArch,
        pc: Option<u64>,
        push_cfa: bool,
    ) -> Result<String, ExprError> {
        translate(
            Expression(EndianSlice::new(bytes, LittleEndian)),
            &cx(arch, pc),
            push_cfa,
        )
        .map(|tokens| crate::breakpad::cfi::postfix_text(&tokens))
    }

    #[test]
    fn offsets_and_negative_constants_render_as_postfix() {
        // DW_OP_breg7 (rsp): 16
        assert_eq!(
            run(&[0x77, 0x10], CfiArch::X86_64, None, false),
            Ok("$rsp 16 +".into())
        );
        // DW_OP_breg7 (rsp): -8
        assert_eq!(
            run(&[0x77, 0x78], CfiArch::X86_64, None, false),
            Ok("$rsp 8 -".into())
        );
        // DW_OP_const1s -5
        assert_eq!(
            run(&[0x09, 0xfb], CfiArch::X86_64, None, false),
            Ok("0 5 -".into())
        );
    }

    #[test]
    fn i686_realigned_main() {
        // DW_OP_breg5 (ebp): -4; DW_OP_deref
        assert_eq!(
            run(&[0x75, 0x7c, 0x06], CfiArch::X86, None, false),
            Ok("$ebp 4 - ^".into())
        );
        // DW_CFA_expression rule: DW_OP_breg5 (ebp): -8, with the CFA pushed first.
        assert_eq!(
            run(&[0x75, 0x78], CfiArch::X86, None, true),
            Ok("$ebp 8 -".into())
        );
    }

    #[test]
    fn x86_64_plt_folds_with_the_pc() {
        // DW_OP_breg7 (rsp): 8; DW_OP_breg16 (rip): 0; DW_OP_lit15; DW_OP_and;
        // DW_OP_lit11; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
        let plt = [
            0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
        ];
        assert_eq!(
            run(&plt, CfiArch::X86_64, None, false),
            Err(ExprError::NeedsPc)
        );
        assert_eq!(
            run(&plt, CfiArch::X86_64, Some(0x1020), false),
            Ok("$rsp 8 +".into())
        );
        assert_eq!(
            run(&plt, CfiArch::X86_64, Some(0x102a), false),
            Ok("$rsp 8 +".into())
        );
        assert_eq!(
            run(&plt, CfiArch::X86_64, Some(0x102b), false),
            Ok("$rsp 16 +".into())
        );
        assert_eq!(
            run(&plt, CfiArch::X86_64, Some(0x102f), false),
            Ok("$rsp 16 +".into())
        );
    }

    #[test]
    fn stack_realignment_mask_becomes_align() {
        // DW_OP_breg7 (rsp): 0; DW_OP_const1s -16; DW_OP_and
        assert_eq!(
            run(
                &[0x77, 0x00, 0x09, 0xf0, 0x1a],
                CfiArch::X86_64,
                None,
                false
            ),
            Ok("$rsp 16 @".into())
        );
    }

    #[test]
    fn unsupported_and_malformed() {
        // DW_OP_bra
        assert!(matches!(
            run(&[0x30, 0x28, 0x00, 0x00], CfiArch::X86_64, None, false),
            Err(ExprError::Unsupported(_))
        ));
        // truncated DW_OP_const4u
        assert!(matches!(
            run(&[0x0c, 0x01], CfiArch::X86_64, None, false),
            Err(ExprError::Unsupported(_))
        ));
        // empty
        assert!(run(&[], CfiArch::X86_64, None, false).is_err());
        // DW_OP_plus on an empty stack
        assert!(run(&[0x22], CfiArch::X86_64, None, false).is_err());
    }
}
