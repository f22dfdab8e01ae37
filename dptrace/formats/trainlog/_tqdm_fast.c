/*
 * dptrace.formats.trainlog._tqdm_fast: trainlog.general._tqdm_updates in C (optional; see setup.py).
 *
 *     configure(pre_cache, pre_info, unit_cache, unit_kind, tqdm_count, postfix, scan_text)
 *     tqdm_updates(text, line_prefix, line, start, rows) -> bool
 *
 * tqdm_updates() appends to rows.tp / rows.tm exactly the tuples that the pure-Python
 * trainlog._tqdm_updates() appends and returns True, or appends nothing and returns False
 * ("decline": the caller then runs the Python function). It declines whenever it is not
 * sure, and it only appends once the whole line has been read without a doubt, so a decline
 * never leaves half a line behind.
 *
 * What is done in C: cutting the line at '\r', matching each segment against
 * trainlog._UPDATES (= _trainlog_rules.TQDM_SEGMENT anchored at a segment start), the rate's
 * float(), the count's int() when it is plain digits, the dict look-ups in _PRE and _UNIT,
 * and building the row tuples. Everything else is the very same Python code, called back:
 * _pre_info(pre) and rules.rate_unit(scale, unit, per) on cache misses, rules._tqdm_count(count)
 * for counts like '1.5k', the postfix reader for a postfix containing '=' (rules._POSTFIX,
 * rules._snake, float), and _SCAN_TEXT.search for an unmatched first segment.
 *
 * Declines: a non-ASCII character that Unicode calls numeric anywhere in the line (Python's
 * \d, str.isdigit, int() and float() accept Unicode digits; this code only knows 0-9), a
 * plain-digit count of more than 18 digits, a rate longer than 300 characters, any
 * exception raised by a callback (the Python path then raises it, or not, itself),
 * unexpected types in the caches, rows.tp / rows.tm not lists, text not a str.
 *
 * The grammar, TQDM_SEGMENT (NUM = [-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?):
 *
 *   (?P<pre>[^\r]{0,240}?)                         lazy: the smallest length that works
 *   (?P<n>\d+(?:\.\d+)?[kMGT]?)                    A
 *   (?:/(?:\d+(?:\.\d+)?[kMGT]?|\?))?              B
 *   [A-Za-z]{0,20}[ \t]*                           C, D
 *   \[\d[\d:]*(?:<[\d:?]+)?,[ \t]*                 E, F, G
 *   (?:(?P<rate>NUM)|\?)[ \t]*                     H, I
 *   (?P<scale>[kMGT]?)(?P<unit>[A-Za-z_]{1,30})/   J, K
 *   (?P<per>s|[A-Za-z_]{1,30})                     M
 *   (?P<post>[^\]\r]{0,500})\](?![^\r]*\{')[^\r]*   N, O, P
 *
 * Python's re tries pre lengths 0, 1, ..., 240 (never past a '\r') and, at each, the rest
 * with backtracking; the first success gives the groups. This code tries the same pre
 * lengths in the same order (only where a digit starts, as A needs one) and decides the
 * rest without backtracking, because each choice point of the rest has one outcome that
 * can succeed, or the greedy outcome succeeds whenever another would, with the same groups:
 *
 *  A  \d+ : giving a digit back leaves a digit next, which nothing after A accepts
 *     ('.', kMGT, '/', letters, blanks, '['): maximal. (?:\.\d+)? : when '.' follows, it must
 *     be taken (nothing after accepts '.'), so '.' without a digit after it fails; its \d+
 *     is maximal as above. [kMGT]? : when the letter is not taken, C must take it; C then
 *     holds that letter plus the letters after it, with the same end; taking it leaves C
 *     one letter shorter, so taking succeeds whenever not taking does: greedy (the groups
 *     of the first success are those of the greedy choice).
 *  B  when '/' follows, B must be taken ('/' is accepted by nothing else); inside, \d+ and
 *     (?:\.\d+)? and [kMGT]? as in A; '?' is the other alternative (exclusive).
 *  C  [A-Za-z]{0,20}: giving back leaves a letter next, which D and E do not accept:
 *     the whole run of letters, and fail when it is longer than 20.
 *  D, G, I  blanks: the next token (E '[', H sign/digit/'.'/'?', J/K letters) accepts no
 *     blank: maximal.
 *  F  [\d:]* and [\d:?]+ are followed by '<' or ',', which they do not contain: maximal;
 *     the '<' group must be taken when '<' follows (',' is expected otherwise).
 *  H  NUM and '?' start with different characters. In NUM: the sign must be taken when
 *     present; \d+\.?\d* vs \.\d+ start differently; every split of the mantissa ends at
 *     the end of the digits[.digits] run (a digit or '.' left over is accepted by nothing
 *     after NUM: blanks, kMGT, [A-Za-z_]), so the rate's span is that run whatever the
 *     split. The exponent group is taken iff [eE][-+]?\d+ matches (\d+ maximal): if it
 *     were not taken, K would have to start at the 'e', take just it (a sign or digit
 *     follows) and meet a sign or digit instead of '/'.
 *  J, K  K takes the whole run R of [A-Za-z_] (giving back leaves a letter before '/'),
 *     and R must be followed by '/'. J greedy takes a kMGT first letter; that fails only
 *     when nothing is left for K (len(R) == 1) or R[1:] is longer than 30, and in the
 *     latter case J empty fails too (R longer still). So: scale = R[0] if R[0] in kMGT and
 *     len(R) >= 2; unit = the rest, at most 30 long.
 *  M, N, O  N is [^\]\r]{0,500} then ']': it must end at the first ']' (no ']' inside it;
 *     giving back leaves a non-']' next), so M+N+O succeed iff the first ']' after M's
 *     start is at most 500 characters after M's end. M tries 's' first; then the run of
 *     [A-Za-z_] (at most 30, greedy: a shorter per only makes N longer).
 *  P  [^\r]* takes the rest of the segment; it fails only when the rest holds "{'" (a
 *     Python dict printed after the bar: the segment is not an update).
 *
 * Each match therefore spans a whole '\r' segment, and findall's matches are exactly the
 * segments (from the line start or after a '\r') at which this succeeds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *pre_cache, *pre_info, *unit_cache, *unit_kind, *tqdm_count, *postfix,
    *scan_text, *s_tqdm, *s_instance, *s_tp, *s_tm;

/* The last (scale, unit, per) and pre looked up, with what _UNIT / _PRE gave for them
 * (strong references; reset by configure()). rate_unit and _pre_info are pure functions of
 * their arguments and _UNIT / _PRE only ever hold their results, so for an equal key the
 * Python code gets this very value (or an equal one, recomputed after _PRE.clear()). */
static PyObject *memo_scale, *memo_unit, *memo_per, *memo_kind, *memo_pre, *memo_info;

typedef struct {
    int kind;
    const void *data;
} Text;

#define CH(t, i) PyUnicode_READ((t)->kind, (t)->data, (i))
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
#define IS_ALPHA(c) (((c) >= 'A' && (c) <= 'Z') || ((c) >= 'a' && (c) <= 'z'))
#define IS_WORD(c) (IS_ALPHA(c) || (c) == '_')
#define IS_BLANK(c) ((c) == ' ' || (c) == '\t')
#define IS_KMGT(c) ((c) == 'k' || (c) == 'M' || (c) == 'G' || (c) == 'T')

typedef struct {
    Py_ssize_t n_s, n_e, rate_s, rate_e, scale_s, scale_e, unit_s, unit_e, per_s, per_e,
        post_s, post_e;
} Match;

/* digits from i (i < e or not); returns the index after them */
static Py_ssize_t
digits(const Text *t, Py_ssize_t i, Py_ssize_t e)
{
    while (i < e && IS_DIGIT(CH(t, i)))
        i++;
    return i;
}

/* \d+(?:\.\d+)?[kMGT]? at i (a digit is there); -1 when it cannot be part of a match */
static Py_ssize_t
count_part(const Text *t, Py_ssize_t i, Py_ssize_t e)
{
    i = digits(t, i, e);
    if (i < e && CH(t, i) == '.') {
        if (!(i + 1 < e && IS_DIGIT(CH(t, i + 1))))
            return -1;
        i = digits(t, i + 1, e);
    }
    if (i < e && IS_KMGT(CH(t, i)))
        i++;
    return i;
}

/* everything of TQDM_SEGMENT after pre, at p in a segment ending at e: 1 match, 0 none */
static int
rest(const Text *t, Py_ssize_t p, Py_ssize_t e, Match *m)
{
    Py_ssize_t i = p, j, k, r;
    Py_UCS4 c;

    if (!(i < e && IS_DIGIT(CH(t, i))))
        return 0;
    m->n_s = i;
    if ((i = count_part(t, i, e)) < 0)
        return 0;
    m->n_e = i;
    if (i < e && CH(t, i) == '/') { /* B */
        i++;
        if (i < e && IS_DIGIT(CH(t, i))) {
            if ((i = count_part(t, i, e)) < 0)
                return 0;
        }
        else if (i < e && CH(t, i) == '?')
            i++;
        else
            return 0;
    }
    for (j = i; j < e && IS_ALPHA(CH(t, j)); j++) /* C */
        ;
    if (j - i > 20)
        return 0;
    for (i = j; i < e && IS_BLANK(CH(t, i)); i++) /* D */
        ;
    if (!(i < e && CH(t, i) == '[')) /* E */
        return 0;
    i++;
    if (!(i < e && IS_DIGIT(CH(t, i)))) /* F */
        return 0;
    for (i++; i < e && ((c = CH(t, i)) == ':' || IS_DIGIT(c)); i++)
        ;
    if (i < e && CH(t, i) == '<') {
        for (j = ++i; i < e && ((c = CH(t, i)) == ':' || c == '?' || IS_DIGIT(c)); i++)
            ;
        if (i == j)
            return 0;
    }
    if (!(i < e && CH(t, i) == ','))
        return 0;
    for (i++; i < e && IS_BLANK(CH(t, i)); i++) /* G */
        ;
    if (i < e && CH(t, i) == '?') { /* H */
        m->rate_s = m->rate_e = -1;
        i++;
    }
    else {
        m->rate_s = i;
        if (i < e && ((c = CH(t, i)) == '-' || c == '+'))
            i++;
        if (i < e && IS_DIGIT(CH(t, i))) {
            i = digits(t, i, e);
            if (i < e && CH(t, i) == '.')
                i = digits(t, i + 1, e);
        }
        else if (i + 1 < e && CH(t, i) == '.' && IS_DIGIT(CH(t, i + 1)))
            i = digits(t, i + 1, e);
        else
            return 0;
        if (i < e && ((c = CH(t, i)) == 'e' || c == 'E')) {
            j = i + 1;
            if (j < e && ((c = CH(t, j)) == '-' || c == '+'))
                j++;
            if (j < e && IS_DIGIT(CH(t, j)))
                i = digits(t, j, e);
        }
        m->rate_e = i;
    }
    for (; i < e && IS_BLANK(CH(t, i)); i++) /* I */
        ;
    for (j = i; j < e && IS_WORD(CH(t, j)); j++) /* J, K */
        ;
    r = j - i;
    if (r == 0 || !(j < e && CH(t, j) == '/'))
        return 0;
    if (IS_KMGT(CH(t, i)) && r >= 2) {
        if (r - 1 > 30)
            return 0;
        m->scale_s = i;
        m->scale_e = m->unit_s = i + 1;
    }
    else {
        if (r > 30)
            return 0;
        m->scale_s = m->scale_e = m->unit_s = i;
    }
    m->unit_e = j;
    i = j + 1; /* M, N, O */
    for (k = i; k < e && CH(t, k) != ']'; k++)
        ;
    if (k >= e)
        return 0;
    if (i < e && CH(t, i) == 's' && k - (i + 1) <= 500) {
        m->per_s = i;
        m->per_e = i + 1;
    }
    else {
        for (j = i; j < e && j - i < 30 && IS_WORD(CH(t, j)); j++)
            ;
        if (j == i || k - j > 500)
            return 0;
        m->per_s = i;
        m->per_e = j;
    }
    for (j = k + 1; j + 1 < e; j++) /* P: no "{'" after the bar (a dict: not an update) */
        if (CH(t, j) == '{' && CH(t, j + 1) == '\'')
            return 0;
    m->post_s = m->per_e;
    m->post_e = k;
    return 1;
}

/* the segment [s, e) as a whole update: 1 (m filled, pre = [s, pre_end)), 0 not one */
static int
segment(const Text *t, Py_ssize_t s, Py_ssize_t e, Match *m)
{
    Py_ssize_t p, last = s + 240 < e ? s + 240 : e - 1;

    for (p = s; p <= last; p++) {
        if (IS_DIGIT(CH(t, p)) && rest(t, p, e, m))
            return 1;
    }
    return 0;
}

/* an exception of a callback: decline (0) for ordinary ones, propagate (-1) the others */
static int
callback_failed(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

typedef struct {
    PyObject *text, *line_prefix, *line, *tp, *tm;
    Text t;
    Py_ssize_t start;
} Line;

/* whether text[s:e] == str */
static int
span_eq(const Text *t, Py_ssize_t s, Py_ssize_t e, PyObject *str)
{
    int kind;
    const void *data;
    Py_ssize_t i;

    if (str == NULL || PyUnicode_GET_LENGTH(str) != e - s)
        return 0;
    kind = PyUnicode_KIND(str);
    data = PyUnicode_DATA(str);
    for (i = 0; i < e - s; i++) {
        if (PyUnicode_READ(kind, data, i) != CH(t, s + i))
            return 0;
    }
    return 1;
}

/* _UNIT[sig] (a new reference), calling rules.rate_unit on a miss; NULL with *ret set: 0 decline,
 * -1 error */
static PyObject *
unit_of(Line *L, const Match *m, int *ret)
{
    PyObject *scale = NULL, *unit = NULL, *per = NULL, *sig = NULL, *kind = NULL, *made;
    const Text *t = &L->t;

    *ret = -1;
    if (span_eq(t, m->scale_s, m->scale_e, memo_scale) &&
        span_eq(t, m->unit_s, m->unit_e, memo_unit) && span_eq(t, m->per_s, m->per_e, memo_per))
        return Py_NewRef(memo_kind);
    if (!(scale = PyUnicode_Substring(L->text, m->scale_s, m->scale_e)) ||
        !(unit = PyUnicode_Substring(L->text, m->unit_s, m->unit_e)) ||
        !(per = PyUnicode_Substring(L->text, m->per_s, m->per_e)) ||
        !(sig = PyTuple_Pack(3, scale, unit, per)))
        goto done;
    kind = PyDict_GetItemWithError(unit_cache, sig);
    if (kind != NULL)
        Py_INCREF(kind);
    else if (PyErr_Occurred())
        goto done;
    else {
        /* _UNIT.setdefault(sig, rules.rate_unit(*sig)) */
        if (!(made = PyObject_CallFunctionObjArgs(unit_kind, scale, unit, per, NULL))) {
            *ret = callback_failed();
            goto done;
        }
        kind = PyDict_SetDefault(unit_cache, sig, made);
        Py_DECREF(made);
        if (kind == NULL)
            goto done;
        Py_INCREF(kind);
    }
    if (kind != Py_None &&
        (!PyTuple_CheckExact(kind) || PyTuple_GET_SIZE(kind) != 3 ||
         !PyFloat_CheckExact(PyTuple_GET_ITEM(kind, 1)) ||
         (PyTuple_GET_ITEM(kind, 2) != Py_True && PyTuple_GET_ITEM(kind, 2) != Py_False))) {
        *ret = 0;
        Py_CLEAR(kind);
        goto done;
    }
    Py_XSETREF(memo_scale, Py_NewRef(scale));
    Py_XSETREF(memo_unit, Py_NewRef(unit));
    Py_XSETREF(memo_per, Py_NewRef(per));
    Py_XSETREF(memo_kind, Py_NewRef(kind));
done:
    Py_XDECREF(scale);
    Py_XDECREF(unit);
    Py_XDECREF(per);
    Py_XDECREF(sig);
    return kind;
}

/* _PRE.get(pre) or _pre_info(pre) (a new reference); NULL with *ret set as unit_of */
static PyObject *
info_of(Line *L, Py_ssize_t s, Py_ssize_t e, int *ret)
{
    PyObject *pre, *info;

    *ret = -1;
    if (span_eq(&L->t, s, e, memo_pre))
        return Py_NewRef(memo_info);
    if (!(pre = PyUnicode_Substring(L->text, s, e)))
        return NULL;
    info = PyDict_GetItemWithError(pre_cache, pre);
    if (info != NULL)
        Py_INCREF(info);
    else if (PyErr_Occurred())
        goto done;
    else if (!(info = PyObject_CallOneArg(pre_info, pre))) {
        *ret = callback_failed();
        goto done;
    }
    if (!PyTuple_CheckExact(info) || PyTuple_GET_SIZE(info) != 3) {
        *ret = 0;
        Py_CLEAR(info);
        goto done;
    }
    Py_XSETREF(memo_pre, Py_NewRef(pre));
    Py_XSETREF(memo_info, Py_NewRef(info));
done:
    Py_DECREF(pre);
    return info;
}

/* A row holding only objects the garbage collector does not track (str, int, float, None)
 * cannot be in a reference cycle: untrack it now, as the collector itself would do at its
 * next pass (_PyTuple_MaybeUntrack), which spares it the work on ~10^5 young rows. */
static void
untrack_atomic(PyObject *row)
{
    Py_ssize_t i;

    for (i = 0; i < PyTuple_GET_SIZE(row); i++) {
        if (PyObject_IS_GC(PyTuple_GET_ITEM(row, i)))
            return;
    }
    PyObject_GC_UnTrack(row);
}

/* Append a new row (a new reference, or NULL after an error) to list and release it;
 * -1 on error. */
static int
append_row(PyObject *list, PyObject *row)
{
    int r;

    if (!row)
        return -1;
    r = PyList_Append(list, row);
    if (r == 0)
        untrack_atomic(row);
    Py_DECREF(row);
    return r;
}

/* the rows of one update into L->tp / L->tm: 1 done, 0 decline, -1 error */
static int
update_rows(Line *L, Py_ssize_t s, const Match *m)
{
    PyObject *kind, *info, *count = NULL, *step = NULL, *seg = NULL, *post = NULL,
        *pairs = NULL,
        *value = NULL, *prefix;
    const Text *t = &L->t;
    Py_ssize_t i, len;
    int ret = -1, inverse;
    char buf[301], *end;
    double v;

    if (m->rate_s < 0) /* '?it/s' */
        return 1;
    if (!(kind = unit_of(L, m, &ret)))
        return ret;
    if (kind == Py_None) {
        ret = 1;
        goto done_kind;
    }
    inverse = PyTuple_GET_ITEM(kind, 2) == Py_True;

    /* float(rate): the same PyOS_string_to_double call as float() on this ASCII text */
    len = m->rate_e - m->rate_s;
    if (len > 300) {
        ret = 0;
        goto done_kind;
    }
    for (i = 0; i < len; i++)
        buf[i] = (char)CH(t, m->rate_s + i);
    buf[len] = '\0';
    v = PyOS_string_to_double(buf, &end, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        ret = callback_failed();
        goto done_kind;
    }
    if (end != buf + len) {
        ret = 0;
        goto done_kind;
    }
    if (inverse) {
        if (v == 0) {
            ret = 1;
            goto done_kind;
        }
        v = 1.0 / v;
    }
    else
        v *= PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(kind, 1));

    if (!(info = info_of(L, s, m->n_s, &ret)))
        goto done_kind;
    prefix = PyTuple_GET_ITEM(info, 0);
    if (prefix == Py_None)
        prefix = L->line_prefix;

    /* int(count) if count.isdigit() else rules._tqdm_count(count) */
    len = m->n_e - m->n_s;
    for (i = m->n_s; i < m->n_e && IS_DIGIT(CH(t, i)); i++)
        ;
    if (i == m->n_e) {
        long long n = 0;
        if (len > 18) {
            ret = 0;
            goto done_info;
        }
        for (i = m->n_s; i < m->n_e; i++)
            n = n * 10 + (CH(t, i) - '0');
        if (!(step = PyLong_FromLongLong(n)))
            goto done_info;
    }
    else {
        if (!(count = PyUnicode_Substring(L->text, m->n_s, m->n_e)))
            goto done_info;
        if (!(step = PyObject_CallOneArg(tqdm_count, count))) {
            ret = callback_failed();
            goto done_info;
        }
        if (!PyLong_CheckExact(step)) {
            ret = 0;
            goto done_info;
        }
    }
    if (!(seg = PyLong_FromSsize_t(L->start + s)) || !(value = PyFloat_FromDouble(v)))
        goto done_info;
    if (append_row(L->tp, PyTuple_Pack(11, prefix, L->line, seg, s_tqdm, s_tqdm,
                                       PyTuple_GET_ITEM(kind, 0), value, s_instance, step,
                                       PyTuple_GET_ITEM(info, 2), PyTuple_GET_ITEM(info, 1))) < 0)
        goto done_info;

    /* if "=" in post: rows of the postfix, read by the Python helper */
    for (i = m->post_s; i < m->post_e && CH(t, i) != '='; i++)
        ;
    if (i < m->post_e) {
        PyObject *seq;
        if (!(post = PyUnicode_Substring(L->text, m->post_s, m->post_e)))
            goto done_info;
        if (!(pairs = PyObject_CallOneArg(postfix, post))) {
            ret = callback_failed();
            goto done_info;
        }
        if (!PyList_CheckExact(pairs)) {
            ret = 0;
            goto done_info;
        }
        seq = pairs;
        for (i = 0; i < PyList_GET_SIZE(seq); i++) {
            PyObject *pair = PyList_GET_ITEM(seq, i);
            if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
                ret = 0;
                goto done_info;
            }
            if (append_row(L->tm, PyTuple_Pack(8, prefix, L->line, seg, s_tqdm,
                                               PyTuple_GET_ITEM(pair, 0),
                                               PyTuple_GET_ITEM(pair, 1), step,
                                               PyTuple_GET_ITEM(info, 2))) < 0)
                goto done_info;
        }
    }
    ret = 1;
done_info:
    Py_DECREF(info);
done_kind:
    Py_DECREF(kind);
    Py_XDECREF(count);
    Py_XDECREF(step);
    Py_XDECREF(seg);
    Py_XDECREF(value);
    Py_XDECREF(post);
    Py_XDECREF(pairs);
    return ret;
}

/* 1 accepted, 0 declined, -1 error; rows go to L->tp / L->tm (new lists) */
static int
read_line(Line *L, Py_ssize_t n)
{
    const Text *t = &L->t;
    Py_ssize_t s, e, i;
    Match m;
    int r;

    /* a Unicode digit or number anywhere: \d, isdigit, int() and float() see more than 0-9 */
    if (PyUnicode_MAX_CHAR_VALUE(L->text) > 127) {
        Py_UCS4 c, seen = 0; /* the last non-ASCII character found not numeric */
        for (i = 0; i < n; i++) {
            if ((c = CH(t, i)) > 127 && c != seen) {
                if (Py_UNICODE_ISNUMERIC(c) || Py_UNICODE_ISDIGIT(c) || Py_UNICODE_ISDECIMAL(c))
                    return 0;
                seen = c;
            }
        }
    }
    for (s = 0; s <= n; s = e + 1) {
        for (e = s; e < n && CH(t, e) != '\r'; e++)
            ;
        if (e == s)
            continue;
        if (segment(t, s, e, &m)) {
            if ((r = update_rows(L, s, &m)) != 1)
                return r;
            continue;
        }
        /* not an update: allowed only as the first segment, without '[' or keywords */
        if (s != 0)
            return 0;
        for (i = s; i < e; i++) {
            if (CH(t, i) == '[')
                return 0;
        }
        {
            PyObject *head = PyUnicode_Substring(L->text, s, e), *found;
            if (!head)
                return -1;
            found = PyObject_CallOneArg(scan_text, head);
            Py_DECREF(head);
            if (!found)
                return callback_failed();
            r = found == Py_None;
            Py_DECREF(found);
            if (!r)
                return 0;
        }
    }
    return 1;
}

/* trainlog._split_prefix(text)[0], a new reference (str or None), for a text in which
 * read_line() finds no Unicode number (it declines the others, so only 0-9 are digits):
 *
 *   _PREFIX = ^\s*(?:(?P<srun>\d{1,6}): |\[(?P<job>\d+),(?P<rank>\d+)\]<std(?:out|err|diag)>:
 *                   |\[rank(?P<grank>\d+)\](?::|\s)
 *                   |\[(?P<role>[A-Za-z_]+\d+)\]:|\[(?P<bare>\d{1,6})\]\s)
 *   label = srun or rank or grank or role or bare
 *
 * Without backtracking: \s* is followed by a digit or '[' (not spaces): maximal. srun: a
 * shorter \d{1,6} leaves a digit before ': ', so the run of digits must be 1-6 long. After
 * '[', a digit rules out role, and job's ',' and bare's ']' after the digits exclude each
 * other; \d+, [A-Za-z_]+ are followed by what they do not contain (',', ']', a digit):
 * maximal. \s is Py_UNICODE_ISSPACE, as in sre for str patterns. */
static PyObject *
split_prefix(PyObject *text, const Text *t, Py_ssize_t n)
{
    Py_ssize_t i = 0, a, b, d;

    while (i < n && Py_UNICODE_ISSPACE(CH(t, i)))
        i++;
    if (i < n && IS_DIGIT(CH(t, i))) { /* srun */
        a = i;
        i = digits(t, i, n);
        if (i - a <= 6 && i + 1 < n && CH(t, i) == ':' && CH(t, i + 1) == ' ')
            return PyUnicode_Substring(text, a, i);
        Py_RETURN_NONE;
    }
    if (!(i < n && CH(t, i) == '['))
        Py_RETURN_NONE;
    a = ++i;
    if (i < n && IS_DIGIT(CH(t, i))) {
        b = digits(t, i, n);
        if (b < n && CH(t, b) == ',') { /* job, rank */
            static const char *const tails[] = {"out>:", "err>:", "diag>:"};
            int k;
            Py_ssize_t j, m;
            if (!(b + 1 < n && IS_DIGIT(CH(t, b + 1))))
                Py_RETURN_NONE;
            d = digits(t, b + 1, n);
            if (!(d + 4 < n && CH(t, d) == ']' && CH(t, d + 1) == '<' && CH(t, d + 2) == 's' &&
                  CH(t, d + 3) == 't' && CH(t, d + 4) == 'd'))
                Py_RETURN_NONE;
            for (k = 0; k < 3; k++) {
                m = (Py_ssize_t)strlen(tails[k]);
                for (j = 0; j < m && d + 5 + j < n && CH(t, d + 5 + j) == (Py_UCS4)tails[k][j];
                     j++)
                    ;
                if (j == m)
                    return PyUnicode_Substring(text, b + 1, d);
            }
            Py_RETURN_NONE;
        }
        if (b - a <= 6 && b + 1 < n && CH(t, b) == ']' && Py_UNICODE_ISSPACE(CH(t, b + 1)))
            return PyUnicode_Substring(text, a, b); /* bare */
        Py_RETURN_NONE;
    }
    for (b = i; b < n && IS_WORD(CH(t, b)); b++) /* grank, role */
        ;
    d = digits(t, b, n);
    if (b - i == 4 && CH(t, i) == 'r' && CH(t, i + 1) == 'a' && CH(t, i + 2) == 'n' &&
        CH(t, i + 3) == 'k' && d > b && d + 1 < n && CH(t, d) == ']' &&
        (CH(t, d + 1) == ':' || Py_UNICODE_ISSPACE(CH(t, d + 1))))
        return PyUnicode_Substring(text, b, d); /* [rank3]: [rank3] -> "3" */
    if (b > i && d > b && d + 1 < n && CH(t, d) == ']' && CH(t, d + 1) == ':')
        return PyUnicode_Substring(text, a, d);
    Py_RETURN_NONE;
}

/* reads L->text (set, ready); the entry points below check the arguments */
static PyObject *
run_line(Line *L, PyObject *rows)
{
    PyObject *tp = NULL, *tm = NULL, *result = NULL;
    Py_ssize_t n;
    int r;

    L->t.kind = PyUnicode_KIND(L->text);
    L->t.data = PyUnicode_DATA(L->text);
    n = PyUnicode_GET_LENGTH(L->text);
    if (L->line_prefix == NULL && !(L->line_prefix = split_prefix(L->text, &L->t, n)))
        return NULL;
    L->tp = PyList_New(0);
    L->tm = PyList_New(0);
    if (!L->tp || !L->tm)
        goto done;
    r = read_line(L, n);
    if (r < 0)
        goto done;
    if (r == 0) {
        result = Py_NewRef(Py_False);
        goto done;
    }
    if (!(tp = PyObject_GetAttr(rows, s_tp)) || !(tm = PyObject_GetAttr(rows, s_tm)))
        goto done;
    if (!PyList_CheckExact(tp) || !PyList_CheckExact(tm)) {
        result = Py_NewRef(Py_False);
        goto done;
    }
    if (PyList_SetSlice(tp, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, L->tp) < 0 ||
        PyList_SetSlice(tm, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, L->tm) < 0)
        goto done;
    result = Py_NewRef(Py_True);
done:
    Py_XDECREF(L->tp);
    Py_XDECREF(L->tm);
    Py_XDECREF(tp);
    Py_XDECREF(tm);
    return result;
}

static int
line_args(Line *L, PyObject *const *args)
{
    if (pre_cache == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_tqdm_fast.configure() was not called");
        return -1;
    }
    if (!PyLong_CheckExact(args[3]))
        return 0;
    L->line = args[2];
    L->start = PyLong_AsSsize_t(args[3]);
    if (L->start == -1 && PyErr_Occurred())
        return -1;
    L->tp = L->tm = NULL;
    return 1;
}

static PyObject *
tqdm_updates(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Line L;
    int r;

    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "tqdm_updates(text, line_prefix, line, start, rows)");
        return NULL;
    }
    if ((r = line_args(&L, args)) <= 0)
        return r < 0 ? NULL : Py_NewRef(Py_False);
    L.text = args[0];
    L.line_prefix = args[1];
    if (!PyUnicode_CheckExact(L.text))
        Py_RETURN_FALSE;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(L.text) < 0)
        return NULL;
#endif
    return run_line(&L, args[4]);
}

/* cr_line(raw, whole_start, line, start, rows): the fast path of _Scanner._cr_line for the
 * bytes of a line: as
 *     text = raw.decode("utf-8"); line_prefix = _split_prefix(text)[0] if whole_start else None
 *     "<std" not in text and _tqdm_updates(text, line_prefix, line, start, rows)
 * declining (False, nothing added) when that would be False, and also for bytes that are not
 * UTF-8 or contain ESC (the scanner's _decode then records the bad bytes / strips ANSI). */
static PyObject *
cr_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *raw, *result;
    const char *p;
    Py_ssize_t n, i;
    Line L;
    int r;

    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "cr_line(raw, whole_start, line, start, rows)");
        return NULL;
    }
    if ((r = line_args(&L, args)) <= 0)
        return r < 0 ? NULL : Py_NewRef(Py_False);
    raw = args[0];
    if (!PyBytes_CheckExact(raw) || (args[1] != Py_True && args[1] != Py_False))
        Py_RETURN_FALSE;
    p = PyBytes_AS_STRING(raw);
    n = PyBytes_GET_SIZE(raw);
    /* "<std" and ESC are ASCII: in the UTF-8 bytes iff in the text */
    for (i = 0; i < n; i++) {
        if (p[i] == 0x1b || (p[i] == '<' && i + 3 < n && p[i + 1] == 's' && p[i + 2] == 't' &&
                             p[i + 3] == 'd'))
            Py_RETURN_FALSE;
    }
    if (!(L.text = PyUnicode_DecodeUTF8(p, n, NULL))) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(L.text) < 0) {
        Py_DECREF(L.text);
        return NULL;
    }
#endif
    L.line_prefix = args[1] == Py_True ? NULL : Py_None; /* NULL: run_line finds it */
    result = run_line(&L, args[4]);
    if (args[1] == Py_True)
        Py_XDECREF(L.line_prefix);
    Py_DECREF(L.text);
    return result;
}

/* line_prefix(text): trainlog._split_prefix(text)[0] for texts without Unicode numbers
 * (for the tests) */
static PyObject *
line_prefix(PyObject *self, PyObject *text)
{
    Text t;

    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "line_prefix(text: str)");
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)
        return NULL;
#endif
    t.kind = PyUnicode_KIND(text);
    t.data = PyUnicode_DATA(text);
    return split_prefix(text, &t, PyUnicode_GET_LENGTH(text));
}

static PyObject *
configure(PyObject *self, PyObject *args)
{
    PyObject *a[7];
    PyObject **slots[7] = {&pre_cache, &pre_info, &unit_cache, &unit_kind, &tqdm_count,
                           &postfix, &scan_text};
    int i;

    if (!PyArg_ParseTuple(args, "O!OO!OOOO:configure", &PyDict_Type, &a[0], &a[1],
                          &PyDict_Type, &a[2], &a[3], &a[4], &a[5], &a[6]))
        return NULL;
    for (i = 0; i < 7; i++) {
        Py_INCREF(a[i]);
        Py_XSETREF(*slots[i], a[i]);
    }
    Py_CLEAR(memo_scale);
    Py_CLEAR(memo_unit);
    Py_CLEAR(memo_per);
    Py_CLEAR(memo_kind);
    Py_CLEAR(memo_pre);
    Py_CLEAR(memo_info);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"tqdm_updates", (PyCFunction)(void (*)(void))tqdm_updates, METH_FASTCALL,
     "tqdm_updates(text, line_prefix, line, start, rows) -> bool: trainlog._tqdm_updates."},
    {"cr_line", (PyCFunction)(void (*)(void))cr_line, METH_FASTCALL,
     "cr_line(raw, whole_start, line, start, rows) -> bool: the fast path of _cr_line."},
    {"line_prefix", line_prefix, METH_O, "line_prefix(text): trainlog._split_prefix(text)[0]."},
    {"configure", configure, METH_VARARGS,
     "configure(pre_cache, pre_info, unit_cache, unit_kind, tqdm_count, postfix, scan_text)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tqdm_fast",
    "trainlog._tqdm_updates in C (optional; the Python function is the reference).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__tqdm_fast(void)
{
    if (!(s_tqdm = PyUnicode_InternFromString("tqdm")) ||
        !(s_instance = PyUnicode_InternFromString("instance")) ||
        !(s_tp = PyUnicode_InternFromString("tp")) ||
        !(s_tm = PyUnicode_InternFromString("tm")))
        return NULL;
    return PyModule_Create(&module);
}
