/**
 * Splits a byte stream into protocol lines: on "\n" only (never on U+2028,
 * U+2029 or a lone "\r", which is why `node:readline` is not used), with a
 * trailing "\r" stripped. Works on bytes, so a UTF-8 character split across
 * two chunks is decoded whole.
 */
export class LineSplitter {
    maxLineBytes;
    onTooLong;
    parts = [];
    size = 0;
    /** Dropping an over-long line until its end. */
    discarding = false;
    /**
     * @param maxLineBytes longest line kept; a longer one is dropped and
     *   reported through `onTooLong`.
     */
    constructor(maxLineBytes = 64 * 1024 * 1024, onTooLong = () => { }) {
        this.maxLineBytes = maxLineBytes;
        this.onTooLong = onTooLong;
    }
    /** Feeds a chunk; returns the complete lines it finished. */
    push(chunk) {
        const buf = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
        const lines = [];
        let start = 0;
        for (;;) {
            const nl = buf.indexOf(0x0a, start);
            if (nl < 0)
                break;
            const piece = buf.subarray(start, nl);
            start = nl + 1;
            if (this.discarding) {
                this.discarding = false;
                continue;
            }
            if (this.size + piece.length > this.maxLineBytes) {
                this.onTooLong(this.size + piece.length);
                this.reset();
                continue;
            }
            const whole = this.parts.length === 0 ? piece : Buffer.concat([...this.parts, piece]);
            this.reset();
            lines.push(decode(whole));
        }
        if (start < buf.length && !this.discarding) {
            const rest = buf.subarray(start);
            if (this.size + rest.length > this.maxLineBytes) {
                this.onTooLong(this.size + rest.length);
                this.reset();
                this.discarding = true;
            }
            else {
                // Copy: the caller may reuse its chunk buffer.
                this.parts.push(Buffer.from(rest));
                this.size += rest.length;
            }
        }
        return lines;
    }
    /** At end of input: the unterminated last line, if any. */
    end() {
        if (this.discarding || this.parts.length === 0) {
            this.reset();
            this.discarding = false;
            return undefined;
        }
        const whole = Buffer.concat(this.parts);
        this.reset();
        return decode(whole);
    }
    reset() {
        this.parts = [];
        this.size = 0;
    }
}
function decode(bytes) {
    const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
    return bytes.toString("utf8", 0, end);
}
