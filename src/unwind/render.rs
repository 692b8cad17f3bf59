//! A row of the CFA machine's rules turned into the rules a symbol file can say.

use super::*;

/// Turns a row of the CFA machine's rules into rules to write: `.cfa` first, `.ra`
/// second, then registers by number, each a value or a DWARF expression as postfix. Registers whose rule is "same value" are left out:
/// that is what an unmentioned register means.
pub(super) struct Renderer {
    pub(super) arch: CfiArch,
    pub(super) numbering: Numbering,
    pub(super) encoding: Encoding,
    pub(super) ra: u16,
}

impl Renderer {
    /// The rules of a row over `[start, end)`, by the address each starts at: one entry,
    /// or (rules that read the program counter, only in a PLT) one per change of value
    /// address by address.
    pub(super) fn expand<'a, S: UnwindSection<R<'a>>>(
        &self,
        section: &S,
        rules: &RuleSet,
        (start, end): (u64, u64),
        in_plt: bool,
        plt: &mut PltBudget,
    ) -> Result<Vec<(u64, Rendered)>, FdeError> {
        match self.rules(section, rules, None) {
            Ok(r) => return Ok(vec![(start, r)]),
            Err(expr::ExprError::NeedsPc) => {}
            Err(e) => return Err(skip(e)),
        }
        // Real rules read the program counter only in PLTs, whose entries they describe
        // a few rows each; anywhere else, expanding them address by address is how a
        // crafted table becomes gigabytes.
        if !in_plt {
            return Err(FdeError(
                "a rule reads the program counter outside a PLT section".into(),
            ));
        }
        let mut v: Vec<(u64, Rendered)> = Vec::new();
        for pc in start..end {
            let r = self.rules(section, rules, Some(pc)).map_err(skip)?;
            if v.last().is_none_or(|(_, last)| *last != r) {
                plt.expanded += 1;
                if plt.expanded > plt.limit {
                    return Err(FdeError(format!(
                        "its program-counter-dependent rules change more than once per {PLT_BYTES_PER_ROW} bytes, unlike any PLT's"
                    )));
                }
                v.push((pc, r));
            }
        }
        Ok(v)
    }

    pub(super) fn rules<'a, S: UnwindSection<R<'a>>>(
        &self,
        section: &S,
        rules: &RuleSet,
        pc: Option<u64>,
    ) -> Result<Rendered, expr::ExprError> {
        let ecx = expr::ExprContext {
            arch: self.arch,
            numbering: self.numbering,
            encoding: self.encoding,
            pc,
        };
        let unsupported = |what: String| expr::ExprError::Unsupported(what);
        let name = |reg: u16| self.arch.name(self.numbering, reg);
        let get = |e: &gimli::UnwindExpression<usize>| {
            e.get(section)
                .map_err(|err| unsupported(format!("unreadable expression: {err}")))
        };
        let mut out = Vec::with_capacity(rules.regs.len() + 2);
        let cfa = match &rules.cfa {
            CfaRule::RegisterOffset(reg, offset) => {
                let base = name(*reg)
                    .ok_or_else(|| unsupported(format!("CFA uses unknown register {reg}")))?;
                RowRule::Value(Value::Plus(base, *offset))
            }
            CfaRule::Expression(e) => RowRule::Postfix(expr::translate(get(e)?, &ecx, false)?),
        };
        out.push((Key::Cfa, cfa));
        let render = |reg: u16, rule: &Rule| -> Result<Option<RowRule>, expr::ExprError> {
            let value = match rule {
                Rule::Undefined => Value::Undefined,
                Rule::SameValue => match name(reg) {
                    Some(n) => Value::Reg(n),
                    None => return Ok(None),
                },
                Rule::Offset(n) => Value::At(".cfa", *n),
                Rule::ValOffset(n) => Value::Plus(".cfa", *n),
                Rule::Register(r) => match name(*r) {
                    Some(n) => Value::Reg(n),
                    None => return Err(unsupported(format!("rule names unknown register {r}"))),
                },
                Rule::Expression(e) => {
                    let mut tokens = expr::translate(get(e)?, &ecx, true)?;
                    tokens.push(rows::Token::Op("^"));
                    return Ok(Some(RowRule::Postfix(tokens)));
                }
                Rule::ValExpression(e) => {
                    return Ok(Some(RowRule::Postfix(expr::translate(
                        get(e)?,
                        &ecx,
                        true,
                    )?)));
                }
                Rule::Constant(_) => return Ok(None),
            };
            Ok(Some(RowRule::Value(value)))
        };
        let ra = match rules.get(self.ra) {
            Some(rule) => render(self.ra, rule)?,
            None => None,
        };
        let ra = match ra {
            Some(r) => r,
            // No rule: the return address is still where the call put it. On machines
            // with a link register that is the register itself; on x86 a return address
            // is never in a register, so there is nothing to recover.
            None if self.arch.has_link_register() => {
                RowRule::Value(Value::Reg(name(self.ra).ok_or_else(|| {
                    unsupported(format!("unknown return address register {}", self.ra))
                })?))
            }
            None => RowRule::Value(Value::Undefined),
        };
        out.push((Key::Ra, ra));
        for (reg, rule) in &rules.regs {
            if *reg == self.ra || *rule == Rule::SameValue {
                continue;
            }
            // A register with no name here is not one a walker can restore.
            let Some(n) = name(*reg) else { continue };
            if let Some(value) = render(*reg, rule)? {
                out.push((Key::Reg(*reg, n), value));
            }
        }
        Ok(out)
    }
}
