//! The CFA state machine: runs a CIE's and an FDE's call frame instructions (decoded by
//! gimli) and yields the table rows.
//!
//! Hand-written rather than gimli's `UnwindTable` because that table stores no rule for
//! a register made undefined: it cannot tell "the return address is undefined" (the
//! outermost frame: the walker must stop) from "no rule, the return address is still in
//! its register" (every aarch64 and PowerPC leaf function). This one keeps both.

use gimli::{CallFrameInstruction, UnwindExpression};

/// Most `remember_state` levels kept; GCC uses one or two.
const MAX_REMEMBERED: usize = 64;
/// Most register rules in one row; a damaged program could otherwise grow it without end.
const MAX_RULES: usize = 256;

/// How to find a register's value in the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    Undefined,
    SameValue,
    /// Saved at CFA + n.
    Offset(i64),
    /// Is CFA + n.
    ValOffset(i64),
    /// Is in another register.
    Register(u16),
    /// Saved at the address the expression computes (the CFA pushed first).
    Expression(UnwindExpression<usize>),
    /// Is the value the expression computes (the CFA pushed first).
    ValExpression(UnwindExpression<usize>),
    /// A pseudo-register's constant (aarch64's return-address signing state).
    Constant(u64),
}

/// How to compute the CFA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CfaRule {
    RegisterOffset(u16, i64),
    Expression(UnwindExpression<usize>),
}

/// One row of rules: the CFA and the registers that have a rule, sorted by number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSet {
    pub cfa: CfaRule,
    pub regs: Vec<(u16, Rule)>,
}

impl RuleSet {
    fn set(&mut self, reg: u16, rule: Option<Rule>) -> Result<(), String> {
        match (self.regs.binary_search_by_key(&reg, |r| r.0), rule) {
            (Ok(i), Some(rule)) => self.regs[i].1 = rule,
            (Ok(i), None) => {
                self.regs.remove(i);
            }
            (Err(i), Some(rule)) => {
                if self.regs.len() >= MAX_RULES {
                    return Err("too many register rules".into());
                }
                self.regs.insert(i, (reg, rule));
            }
            (Err(_), None) => {}
        }
        Ok(())
    }

    /// The rule for `reg`, if it has one.
    pub fn get(&self, reg: u16) -> Option<&Rule> {
        self.regs
            .binary_search_by_key(&reg, |r| r.0)
            .ok()
            .map(|i| &self.regs[i].1)
    }
}

/// The parameters of a CIE that the machine needs.
pub struct Factors {
    pub code_alignment: u64,
    pub data_alignment: i64,
}

/// The pseudo-register GCC and gimli use for aarch64's return-address signing state.
const AARCH64_RA_SIGN_STATE: u16 = 34;

/// Runs `instructions` over `state`. With `rows`, the machine is in an FDE: location
/// changes close rows, passed to `rows` as `(start, end, rules)`. `initial` is the state
/// after the CIE's instructions, which `DW_CFA_restore` returns to.
pub fn run(
    mut next: impl FnMut() -> gimli::Result<Option<CallFrameInstruction<usize>>>,
    factors: &Factors,
    state: &mut RuleSet,
    initial: Option<&RuleSet>,
    range: Option<(u64, u64)>,
    rows: &mut dyn FnMut(u64, u64, &RuleSet),
) -> Result<(), String> {
    let mut remembered: Vec<RuleSet> = Vec::new();
    let (mut loc, end) = range.unwrap_or((0, 0));
    let reg16 = |r: gimli::Register| r.0;
    loop {
        let instruction = match next() {
            Ok(Some(i)) => i,
            Ok(None) => break,
            Err(e) => return Err(format!("bad call frame instruction: {e}")),
        };
        use CallFrameInstruction as I;
        match instruction {
            I::SetLoc { address } => {
                if range.is_none() || address < loc {
                    return Err("DW_CFA_set_loc moves backwards".into());
                }
                let new = address.min(end);
                if new > loc {
                    rows(loc, new, state);
                }
                loc = new;
            }
            I::AdvanceLoc { delta } => {
                if range.is_none() {
                    return Err("DW_CFA_advance_loc in a CIE".into());
                }
                let new = loc
                    .saturating_add(u64::from(delta).saturating_mul(factors.code_alignment))
                    .min(end);
                if new > loc {
                    rows(loc, new, state);
                }
                loc = new;
            }
            I::DefCfa { register, offset } => {
                state.cfa = CfaRule::RegisterOffset(reg16(register), offset as i64);
            }
            I::DefCfaSf {
                register,
                factored_offset,
            } => {
                state.cfa = CfaRule::RegisterOffset(
                    reg16(register),
                    factored_offset.wrapping_mul(factors.data_alignment),
                );
            }
            I::DefCfaRegister { register } => match state.cfa {
                CfaRule::RegisterOffset(_, offset) => {
                    state.cfa = CfaRule::RegisterOffset(reg16(register), offset)
                }
                CfaRule::Expression(_) => {
                    return Err("DW_CFA_def_cfa_register after an expression".into());
                }
            },
            I::DefCfaOffset { offset } => match state.cfa {
                CfaRule::RegisterOffset(reg, _) => {
                    state.cfa = CfaRule::RegisterOffset(reg, offset as i64)
                }
                CfaRule::Expression(_) => {
                    return Err("DW_CFA_def_cfa_offset after an expression".into());
                }
            },
            I::DefCfaOffsetSf { factored_offset } => match state.cfa {
                CfaRule::RegisterOffset(reg, _) => {
                    state.cfa = CfaRule::RegisterOffset(
                        reg,
                        factored_offset.wrapping_mul(factors.data_alignment),
                    )
                }
                CfaRule::Expression(_) => {
                    return Err("DW_CFA_def_cfa_offset_sf after an expression".into());
                }
            },
            I::DefCfaExpression { expression } => state.cfa = CfaRule::Expression(expression),
            I::Undefined { register } => state.set(reg16(register), Some(Rule::Undefined))?,
            I::SameValue { register } => state.set(reg16(register), Some(Rule::SameValue))?,
            I::Offset {
                register,
                factored_offset,
            } => state.set(
                reg16(register),
                Some(Rule::Offset(
                    (factored_offset as i64).wrapping_mul(factors.data_alignment),
                )),
            )?,
            I::OffsetExtendedSf {
                register,
                factored_offset,
            } => state.set(
                reg16(register),
                Some(Rule::Offset(
                    factored_offset.wrapping_mul(factors.data_alignment),
                )),
            )?,
            I::ValOffset {
                register,
                factored_offset,
            } => state.set(
                reg16(register),
                Some(Rule::ValOffset(
                    (factored_offset as i64).wrapping_mul(factors.data_alignment),
                )),
            )?,
            I::ValOffsetSf {
                register,
                factored_offset,
            } => state.set(
                reg16(register),
                Some(Rule::ValOffset(
                    factored_offset.wrapping_mul(factors.data_alignment),
                )),
            )?,
            I::Register {
                dest_register,
                src_register,
            } => state.set(
                reg16(dest_register),
                Some(Rule::Register(reg16(src_register))),
            )?,
            I::Expression {
                register,
                expression,
            } => state.set(reg16(register), Some(Rule::Expression(expression)))?,
            I::ValExpression {
                register,
                expression,
            } => state.set(reg16(register), Some(Rule::ValExpression(expression)))?,
            I::Restore { register } => {
                let Some(initial) = initial else {
                    return Err("DW_CFA_restore in a CIE".into());
                };
                let reg = reg16(register);
                state.set(reg, initial.get(reg).cloned())?;
            }
            I::RememberState => {
                if remembered.len() >= MAX_REMEMBERED {
                    return Err("too many DW_CFA_remember_state".into());
                }
                remembered.push(state.clone());
            }
            I::RestoreState => {
                *state = remembered
                    .pop()
                    .ok_or("DW_CFA_restore_state without DW_CFA_remember_state")?;
            }
            I::NegateRaState => {
                let value = match state.get(AARCH64_RA_SIGN_STATE) {
                    Some(Rule::Constant(v)) => *v,
                    _ => 0,
                };
                state.set(AARCH64_RA_SIGN_STATE, Some(Rule::Constant(value ^ 1)))?;
            }
            // The GNU argument size matters to walkers that pop pushed arguments; Breakpad
            // records have no place for it.
            I::ArgsSize { .. } | I::Nop => {}
        }
    }
    if range.is_some() && loc < end {
        rows(loc, end, state);
    }
    Ok(())
}
