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
    fn set(&mut self, reg: u16, rule: Option<Rule>) -> Result<(), CfaError> {
        match (self.regs.binary_search_by_key(&reg, |r| r.0), rule) {
            (Ok(i), Some(rule)) => self.regs[i].1 = rule,
            (Ok(i), None) => {
                self.regs.remove(i);
            }
            (Err(i), Some(rule)) => {
                if self.regs.len() >= MAX_RULES {
                    return Err(CfaError::TooManyRules);
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
/// Why a CIE's or FDE's call frame instructions cannot be run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CfaError {
    #[error("bad call frame instruction: {0}")]
    Instruction(gimli::Error),
    #[error("DW_CFA_set_loc moves backwards (to {0:#x})")]
    SetLocBackwards(u64),
    #[error("{0} in a CIE")]
    InCie(&'static str),
    #[error("{0} after an expression")]
    AfterExpression(&'static str),
    #[error("too many register rules")]
    TooManyRules,
    #[error("too many DW_CFA_remember_state")]
    TooManyRemembered,
    #[error("DW_CFA_restore_state without DW_CFA_remember_state")]
    RestoreWithoutRemember,
}

#[allow(
    clippy::too_many_lines,
    reason = "the CFA virtual machine: one `match` over the call frame instructions"
)]
pub fn run(
    mut next: impl FnMut() -> gimli::Result<Option<CallFrameInstruction<usize>>>,
    factors: &Factors,
    state: &mut RuleSet,
    initial: Option<&RuleSet>,
    range: Option<(u64, u64)>,
    rows: &mut dyn FnMut(u64, u64, &RuleSet),
) -> Result<(), CfaError> {
    let mut remembered: Vec<RuleSet> = Vec::new();
    let (mut loc, end) = range.unwrap_or((0, 0));
    let reg16 = |r: gimli::Register| r.0;
    loop {
        let instruction = match next() {
            Ok(Some(i)) => i,
            Ok(None) => break,
            Err(e) => return Err(CfaError::Instruction(e)),
        };
        use CallFrameInstruction as I;
        match instruction {
            I::SetLoc { address } => {
                if range.is_none() || address < loc {
                    return Err(CfaError::SetLocBackwards(address));
                }
                let new = address.min(end);
                if new > loc {
                    rows(loc, new, state);
                }
                loc = new;
            }
            I::AdvanceLoc { delta } => {
                if range.is_none() {
                    return Err(CfaError::InCie("DW_CFA_advance_loc"));
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
                    return Err(CfaError::AfterExpression("DW_CFA_def_cfa_register"));
                }
            },
            I::DefCfaOffset { offset } => match state.cfa {
                CfaRule::RegisterOffset(reg, _) => {
                    state.cfa = CfaRule::RegisterOffset(reg, offset as i64)
                }
                CfaRule::Expression(_) => {
                    return Err(CfaError::AfterExpression("DW_CFA_def_cfa_offset"));
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
                    return Err(CfaError::AfterExpression("DW_CFA_def_cfa_offset_sf"));
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
                    return Err(CfaError::InCie("DW_CFA_restore"));
                };
                let reg = reg16(register);
                state.set(reg, initial.get(reg).cloned())?;
            }
            I::RememberState => {
                if remembered.len() >= MAX_REMEMBERED {
                    return Err(CfaError::TooManyRemembered);
                }
                remembered.push(state.clone());
            }
            I::RestoreState => {
                *state = remembered.pop().ok_or(CfaError::RestoreWithoutRemember)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use gimli::Register;

    fn run_all(
        cie: Vec<CallFrameInstruction<usize>>,
        fde: Vec<CallFrameInstruction<usize>>,
        range: (u64, u64),
    ) -> Result<Vec<(u64, u64, RuleSet)>, CfaError> {
        let factors = Factors {
            code_alignment: 1,
            data_alignment: -8,
        };
        let mut state = RuleSet {
            cfa: CfaRule::RegisterOffset(0, 0),
            regs: Vec::new(),
        };
        let mut it = cie.into_iter();
        run(
            || Ok(it.next()),
            &factors,
            &mut state,
            None,
            None,
            &mut |_, _, _| {},
        )?;
        let initial = state.clone();
        let mut rows = Vec::new();
        let mut it = fde.into_iter();
        run(
            || Ok(it.next()),
            &factors,
            &mut state,
            Some(&initial),
            Some(range),
            &mut |a, b, r| rows.push((a, b, r.clone())),
        )?;
        Ok(rows)
    }

    use CallFrameInstruction as I;

    fn x86_64_cie() -> Vec<CallFrameInstruction<usize>> {
        vec![
            I::DefCfa {
                register: Register(7),
                offset: 8,
            },
            I::Offset {
                register: Register(16),
                factored_offset: 1,
            },
        ]
    }

    #[test]
    fn epilogue_state_is_remembered_and_restored() {
        let rows = run_all(
            x86_64_cie(),
            vec![
                I::AdvanceLoc { delta: 1 },
                I::DefCfaOffset { offset: 16 },
                I::Offset {
                    register: Register(3),
                    factored_offset: 2,
                },
                I::AdvanceLoc { delta: 4 },
                I::RememberState,
                I::DefCfaOffset { offset: 8 },
                I::Restore {
                    register: Register(3),
                },
                I::AdvanceLoc { delta: 1 },
                I::RestoreState,
            ],
            (0x100, 0x110),
        )
        .unwrap();
        let spans: Vec<(u64, u64)> = rows.iter().map(|r| (r.0, r.1)).collect();
        assert_eq!(
            spans,
            vec![
                (0x100, 0x101),
                (0x101, 0x105),
                (0x105, 0x106),
                (0x106, 0x110)
            ]
        );
        // After `restore`, rbx has no rule again (the CIE gave it none).
        assert_eq!(rows[2].2.get(3), None);
        assert_eq!(rows[2].2.cfa, CfaRule::RegisterOffset(7, 8));
        // `restore_state` brings back both the CFA and rbx's rule.
        assert_eq!(rows[3].2.cfa, CfaRule::RegisterOffset(7, 16));
        assert_eq!(rows[3].2.get(3), Some(&Rule::Offset(-16)));
        assert_eq!(rows[3].2.get(16), Some(&Rule::Offset(-8)));
    }

    #[test]
    fn explicit_undefined_is_kept_apart_from_no_rule() {
        let rows = run_all(
            vec![I::DefCfa {
                register: Register(31),
                offset: 0,
            }],
            vec![
                I::AdvanceLoc { delta: 4 },
                I::Undefined {
                    register: Register(30),
                },
            ],
            (0x900, 0x934),
        )
        .unwrap();
        assert_eq!(rows[0].2.get(30), None);
        assert_eq!(rows[1].2.get(30), Some(&Rule::Undefined));
    }

    #[test]
    fn damaged_programs_are_errors() {
        assert!(run_all(x86_64_cie(), vec![I::RestoreState], (0, 8)).is_err());
        assert!(
            run_all(
                x86_64_cie(),
                vec![I::SetLoc { address: 4 }, I::SetLoc { address: 2 }],
                (0, 8)
            )
            .is_err()
        );
        assert!(run_all(vec![I::AdvanceLoc { delta: 1 }], vec![], (0, 8)).is_err());
        let many: Vec<_> = (0..100).map(|_| I::RememberState).collect();
        assert!(run_all(x86_64_cie(), many, (0, 8)).is_err());
        // Advancing past the end clips the row to the FDE.
        let rows = run_all(x86_64_cie(), vec![I::AdvanceLoc { delta: 1000 }], (0, 8)).unwrap();
        assert_eq!(
            rows.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
            vec![(0, 8)]
        );
    }
}
