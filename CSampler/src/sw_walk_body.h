// The body of the hybrid walk (unwind_walk.c), compiled twice: included with SW_WALK_NAME,
// SW_WALK_FIND_ROW, SW_WALK_ASYNC_CHAIN, SW_WALK_RECORD_RUN and SW_WALK_GUARDED defined. The
// handler's version reads unwind tables and async contexts in place and makes no system call; the
// guarded one (off the sampled thread) reads them through fault-safe copies and honours the walk's
// deadline. Two functions, not a flag, so that the handler's call
// graph, which scripts/check-handler-safety.py reads from the objects, holds no system call.
// No include guard on purpose.
SW_RAW_STACK_READER int SW_WALK_NAME(const sw_walk_regs_t *regs, const sw_walk_mem_t *mem, int outer, uint64_t *out,
                                uint32_t *count, uint32_t cap, sw_walk_result_t *res) {
    uint64_t pc = regs->pc, sp = regs->sp, fp = regs->fp, lr = regs->lr;
    int fp_known = regs->fp_known, lr_known = regs->lr_known;
    uint32_t n = *count;
    // The last module looked up: consecutive frames are mostly in one object, and a lookup is a
    // binary search with cold cache lines, against a nanosecond for the frame record itself.
    uint64_t mod_lo = 1, mod_hi = 0;
    int mod_keeps = 0;
    sw_cfi_object_t last_object = {0, 0, 0}; // the object of the last table row (live walk only)
    (void)last_object;
    // The return address of the runtime's resume call (0 until learnt): the frame whose record
    // holds it is an async function's, its context just below the record.
    const uint64_t async_ra = atomic_load_explicit(&g_sw_async_resume_ra, memory_order_relaxed);
    // The run of table frames the walk is in, if it may become the thread's root memo: where it
    // began, and each frame's return-address slot. tail_n == UINT32_MAX: not in such a run.
#if !SW_WALK_GUARDED
    uint32_t tail_n = UINT32_MAX, tail_k = 0;
    uint64_t tail_pc = 0, tail_sp = 0, tail_fp = 0, tail_slots[SW_ROOT_MEMO_FRAMES], tail_raw[SW_ROOT_MEMO_FRAMES];
#endif
    res->stop = SW_STOP_FRAME_LIMIT;
    if (!outer) {
        if (n >= cap) goto done;
        out[n++] = pc;
    }
    for (;;) {
        if (outer && fp_known && mod_keeps == 1) {
            uint32_t k = SW_WALK_RECORD_RUN(mem, mod_lo, mod_hi, out, &n, cap, &pc, &sp, &fp, &fp_known, async_ra, res);
            res->fp_frames += k;
            if (k != 0) {
                lr_known = 0;
#if !SW_WALK_GUARDED
                tail_n = UINT32_MAX; // frame records: a memo's run of table frames starts after them
#endif
            }
        }
        if (n >= cap) {
            res->stop = SW_STOP_FRAME_LIMIT;
            break;
        }
#if !SW_WALK_GUARDED
        if (outer && root_memo_replay(mem, pc, sp, fp, out, &n, cap)) {
            res->table_frames += mem->root->count;
            res->stop = SW_STOP_ROOT;
            tail_n = UINT32_MAX; // nothing new learnt
            break;
        }
#endif
        // A return address points after its call: the call itself is one byte before.
        uint64_t look = outer ? pc - 1 : pc;
        uint64_t next_pc, next_sp, next_fp = 0;
        int next_fp_known = 0;
        uint64_t record = 0; // where this frame saved the caller's frame pointer, when known
        if (outer && fp_known && (look < mod_lo || look >= mod_hi)) {
            mod_keeps = sw_module_lookup(look, &mod_lo, &mod_hi);
            if (mod_keeps < 0) {
                mod_lo = 1; // unknown: not cached, the unwind table decides
                mod_hi = 0;
            }
        }
        sw_cfi_row_t row;
        int row_found = 0;
        int by_record = outer && fp_known && look >= mod_lo && look < mod_hi && mod_keeps == 1;
        // A module that mostly keeps frame pointers may still hold functions that use the register
        // for data (hand-written or foreign-compiled code linked in): a link that cannot be a frame
        // record is handed to the unwind table for this one frame instead of ending the walk.
        if (by_record && ((fp & ~SW_ASYNC_FP_BIT) != 0) &&
            ((fp & ~SW_ASYNC_FP_BIT) < sp || (fp & 7) != 0))
            by_record = 0;
        if (by_record && (fp & ~SW_ASYNC_FP_BIT) == 0 && res->table_frames < SW_WALK_MAX_TABLE_FRAMES) {
            // A zero link ends the chain of records, or is a register that frameless code further
            // down left zero: the table decides (an undefined return address is the thread's entry).
            if (SW_WALK_FIND_ROW(look, &row, &last_object) == SW_CFI_OK && row.ra_rule != SW_RULE_UNDEFINED) {
                by_record = 0;
                row_found = 1; // the table step below uses it: one lookup, not two
            }
        }
        if (by_record) {
            fp &= ~SW_ASYNC_FP_BIT;
            if (fp == 0) {
                res->stop = SW_STOP_ROOT; // the outermost frame record
                break;
            }
            uint64_t saved_fp, ra;
            if (!stack_word(mem, fp, &saved_fp) || !stack_word(mem, fp + 8, &ra)) {
                res->stop = SW_STOP_UNREADABLE;
                break;
            }
            next_pc = sw_arch_code_address(ra);
            if (next_pc == 0) {
                res->stop = SW_STOP_ROOT;
                break;
            }
            record = fp;
            next_sp = fp + 16;
            next_fp = saved_fp & ~SW_ASYNC_FP_BIT;
            // A record that does not lead further up is not followed; the unwind table may still
            // carry on from the caller, which needs no frame pointer.
            next_fp_known = next_fp == 0 || next_fp > fp;
            res->fp_frames++;
#if !SW_WALK_GUARDED
            tail_n = UINT32_MAX;
#endif
        } else {
            if (res->table_frames >= SW_WALK_MAX_TABLE_FRAMES) {
                res->stop = SW_STOP_BUDGET;
                break;
            }
#if SW_WALK_GUARDED
            if (mem->deadline_ns != 0 && sw_now_ns() >= mem->deadline_ns) {
                res->stop = SW_STOP_TIMED_OUT;
                break;
            }
#endif
            // Frame 0 inside the object of the thread's last capture: its row from the cache, keyed
            // by that object, with no object lookup. Only the live walk carries a hint.
            sw_leaf_hint_t *hint = outer ? NULL : mem->leaf;
            int rc;
            if (hint == NULL || look < hint->start || look >= hint->end ||
                !sw_cfi_cached_row(look, hint->start, hint->hdr, &row, &rc)) {
                rc = row_found ? SW_CFI_OK : SW_WALK_FIND_ROW(look, &row, &last_object);
                if (hint != NULL && last_object.hdr != 0)
                    *hint = (sw_leaf_hint_t){last_object.start, last_object.end, last_object.hdr};
            }
            if (rc != SW_CFI_OK) {
                if (!outer) {
                    res->stop = SW_STOP_NO_ROW_AT_PC; // the caller falls back to frame records
                    break;
                }
                if (rc == SW_CFI_NO_MODULE) {
                    res->stop = SW_STOP_BAD_LINK; // not code of any loaded object
                    break;
                }
                res->stop = SW_STOP_NO_UNWIND_INFO;
                break;
            }
            uint64_t base;
            if (row.cfa_reg == SW_DWARF_SP) {
                base = sp;
            } else if (fp_known) {
                base = fp & ~SW_ASYNC_FP_BIT;
            } else {
                res->stop = SW_STOP_NEED_FP;
                break;
            }
            uint64_t cfa = base + (uint64_t)row.cfa_off;
            uint64_t ra = 0;
            if (row.ra_rule == SW_RULE_UNDEFINED) {
                res->stop = SW_STOP_ROOT; // the thread's or the process's entry point says so
#if !SW_WALK_GUARDED
                // The root step of a memo decides by the PC alone only in an object without frame
                // pointers (in one with them, a zero FP could have made it a frame-record step).
                if (tail_n != UINT32_MAX && (look < mod_lo || look >= mod_hi)) {
                    mod_keeps = sw_module_lookup(look, &mod_lo, &mod_hi);
                    if (mod_keeps < 0) {
                        mod_lo = 1;
                        mod_hi = 0;
                    }
                }
                if (!(outer && mod_keeps == 0 && look >= mod_lo && look < mod_hi)) tail_n = UINT32_MAX;
#endif
                break;
            } else if (row.ra_rule == SW_RULE_AT_CFA && cfa + (uint64_t)row.ra_off < sp && lr_known) {
                ra = lr; // arm64 epilogue: LR was reloaded from a slot that is below SP now
            } else if (row.ra_rule == SW_RULE_AT_CFA) {
                if (!stack_word(mem, cfa + (uint64_t)row.ra_off, &ra)) {
                    res->stop = SW_STOP_UNREADABLE;
                    break;
                }
            } else if (row.ra_rule == SW_RULE_SAME && lr_known) {
                ra = lr; // arm64: a leaf, or a prologue that has not saved LR yet
            } else {
                res->stop = SW_STOP_NO_UNWIND_INFO;
                break;
            }
#if !SW_WALK_GUARDED
            // A frame the root memo may keep: an object without frame pointers (the walk's choice
            // here never depends on FP), a CFA from SP, the return address read from the stack.
            // Without a known FP the walk did not ask which object holds the PC: asked here.
            if (outer && mem->root != NULL && (look < mod_lo || look >= mod_hi)) {
                mod_keeps = sw_module_lookup(look, &mod_lo, &mod_hi);
                if (mod_keeps < 0) {
                    mod_lo = 1;
                    mod_hi = 0;
                }
            }
            if (outer && mem->root != NULL && mod_keeps == 0 && look >= mod_lo && look < mod_hi &&
                row.cfa_reg == SW_DWARF_SP && row.ra_rule == SW_RULE_AT_CFA) {
                if (tail_n == UINT32_MAX) {
                    tail_n = n;
                    tail_k = 0;
                    tail_pc = pc;
                    tail_sp = sp;
                    tail_fp = fp;
                }
                if (tail_k < SW_ROOT_MEMO_FRAMES) {
                    tail_slots[tail_k] = cfa + (uint64_t)row.ra_off;
                    tail_raw[tail_k] = ra;
                }
                tail_k++;
            } else {
                tail_n = UINT32_MAX;
            }
#endif
            // The stack only grows back towards its top: a CFA below SP is a bad row or a bad SP.
            // Equal is fine only when the return address came from a register (arm64 leaf).
            if (cfa < sp || (cfa == sp && row.ra_rule == SW_RULE_AT_CFA)) {
                res->stop = SW_STOP_BAD_LINK;
                break;
            }
            next_pc = sw_arch_code_address(ra);
            if (next_pc == 0) {
                // Entry points say so with an undefined return address (above); a zero read from
                // the stack is a wrong row or a wrong CFA, not a root.
                res->stop = row.ra_rule == SW_RULE_AT_CFA ? SW_STOP_BAD_LINK : SW_STOP_ROOT;
                break;
            }
            // Never a frame that is not code. A return address inside the executable segment of a
            // known object is code; finding that object is also the next frame's first question,
            // so its answer is kept for it. Only an address outside every known object asks the
            // memory-map table.
            if (next_pc - 1 < mod_lo || next_pc - 1 >= mod_hi) {
                mod_keeps = sw_module_lookup(next_pc - 1, &mod_lo, &mod_hi);
                if (mod_keeps < 0) {
                    mod_lo = 1;
                    mod_hi = 0;
                    if (!sw_maps_is_exec(next_pc)) {
                        res->stop = SW_STOP_BAD_LINK;
                        break;
                    }
                }
            }
            next_sp = cfa;
            if (row.fp_rule == SW_RULE_AT_CFA && cfa + (uint64_t)row.fp_off < sp) {
                // A slot below SP was popped already: an epilogue's `pop rbp` ran and the compiler
                // did not say the register is restored (clang does not, before `ret`).
                next_fp = fp;
                next_fp_known = fp_known;
            } else if (row.fp_rule == SW_RULE_AT_CFA) {
                record = cfa + (uint64_t)row.fp_off;
                next_fp_known = stack_word(mem, record, &next_fp);
            } else if (row.fp_rule == SW_RULE_SAME) {
                next_fp = fp;
                next_fp_known = fp_known;
            } else if (row.fp_rule == SW_RULE_IS_CFA) {
                next_fp = cfa + (uint64_t)row.fp_off;
                next_fp_known = 1;
            }
            res->table_frames++;
            if (!outer) res->frame0_by_table = 1;
        }
        if (next_pc == async_ra && async_ra != 0 && res->async_end == SW_ASYNC_NONE) {
            // An async function the runtime resumed: its callers are in its context chain, the
            // context saved just below its frame record. Only the first chain of a stack is followed.
            uint64_t ctx;
            if (record != 0 && stack_word(mem, record - 8, &ctx)) SW_WALK_ASYNC_CHAIN(ctx, mem, mod_lo, mod_hi, out, &n, cap, res);
            else res->async_end = SW_ASYNC_UNREADABLE;
        }
        out[n++] = next_pc;
        pc = next_pc;
        sp = next_sp;
        fp = next_fp;
        fp_known = next_fp_known;
        lr_known = 0;
        outer = 1;
    }
#if !SW_WALK_GUARDED
    if (res->stop == SW_STOP_ROOT && mem->root != NULL && tail_n != UINT32_MAX && tail_k > 0 &&
        tail_k <= SW_ROOT_MEMO_FRAMES && n - tail_n == tail_k) {
        sw_root_memo_t *r = mem->root;
        r->gen = 0; // invalid while rewritten (only this thread's handler reads it, but be plain)
        r->pc = tail_pc;
        r->sp = tail_sp;
        r->fp = tail_fp;
        r->count = tail_k;
        for (uint32_t i = 0; i < tail_k; i++) {
            r->frames[i] = out[tail_n + i];
            r->slots[i] = tail_slots[i];
            r->raw[i] = tail_raw[i];
        }
        r->gen = mem->root_gen;
    }
#endif
done:
    *count = n;
    res->pc = pc;
    res->sp = sp;
    return res->stop == SW_STOP_ROOT ? 0 : 1;
}
