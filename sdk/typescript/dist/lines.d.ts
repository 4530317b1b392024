/**
 * Splits a byte stream into protocol lines: on "\n" only (never on U+2028,
 * U+2029 or a lone "\r", which is why `node:readline` is not used), with a
 * trailing "\r" stripped. Works on bytes, so a UTF-8 character split across
 * two chunks is decoded whole.
 */
export declare class LineSplitter {
    private readonly maxLineBytes;
    private readonly onTooLong;
    private parts;
    private size;
    /** Dropping an over-long line until its end. */
    private discarding;
    /**
     * @param maxLineBytes longest line kept; a longer one is dropped and
     *   reported through `onTooLong`.
     */
    constructor(maxLineBytes?: number, onTooLong?: (bytes: number) => void);
    /** Feeds a chunk; returns the complete lines it finished. */
    push(chunk: Buffer | string): string[];
    /** At end of input: the unterminated last line, if any. */
    end(): string | undefined;
    private reset;
}
