/**
 * `Extension`: registrations, the handshake, the read loop and dispatch.
 */
import type { AssistantMessageInterceptor, Awaitable, BeforeAgentStartInterceptor, CommandHandler, EventHandler, EventMap, GenericEvent, HostInfo, JsonSchema, PanelContent, PanelKeyEvent, Response, ToolArgs, ToolCallInterceptor, ToolHandler, ToolOptions, TurnStartInterceptor } from "./types.js";
import { type NotifyLevel } from "./wire.js";
/** A readable byte stream (the host's frames); `process.stdin` by default. */
export interface InputStream {
    on(event: "data", listener: (chunk: Buffer | string) => void): unknown;
    on(event: "end", listener: () => void): unknown;
    on(event: "error", listener: (err: Error) => void): unknown;
    removeListener(event: string, listener: (...args: never[]) => void): unknown;
    pause?(): unknown;
    resume?(): unknown;
    destroy?(): unknown;
    isTTY?: boolean;
}
/** A writable stream (our frames); `process.stdout` by default. */
export interface OutputStream {
    write(chunk: string): unknown;
    on?(event: "error", listener: (err: Error) => void): unknown;
    removeListener?(event: string, listener: (...args: never[]) => void): unknown;
}
export interface ExtensionOptions {
    /** Host → extension frames. Default `process.stdin`. */
    input?: InputStream;
    /** Extension → host frames. Default `process.stdout`. */
    output?: OutputStream;
    /** Diagnostics (the host appends stderr to the extension's log). Default `process.stderr`. */
    stderr?: {
        write(chunk: string): unknown;
    };
    /** Sent in `hello`. Default `["commands", "tools", "events", "panels"]`. */
    capabilities?: string[];
    /**
     * From construction until the run ends, send `console.log`, `console.info`
     * and `console.debug` to stderr so stray logging cannot corrupt the
     * protocol stream. Default: true when `output` is `process.stdout`.
     */
    redirectConsole?: boolean;
    /** How long `shutdown` may wait for queued events and `onShutdown` handlers. Default 1500 ms. */
    shutdownGraceMs?: number;
}
/** Handlers of one panel. */
export interface PanelHandlers {
    /** A key while the panel is focused. Keys of one panel are handled in order. */
    onKey?: (event: PanelKeyEvent, panel: Panel) => Awaitable<void>;
    /** The user closed the panel in zot. */
    onClose?: (panel: Panel) => Awaitable<void>;
}
/**
 * An extension-owned panel (TUI only). Get one with `ext.panel(id, handlers)`,
 * open it by returning `panel.open(content)` from a command, then push frames
 * with `render` while it is open.
 */
export declare class Panel {
    private readonly ext;
    readonly id: string;
    handlers: PanelHandlers;
    private openNow;
    /** Use `ext.panel(id, handlers)` rather than constructing panels directly. */
    constructor(ext: Extension, id: string, handlers?: PanelHandlers);
    /** Whether the panel is open as far as this extension knows. */
    get isOpen(): boolean;
    /** A command response that opens this panel with its first frame. */
    open(content?: PanelContent): Response;
    /** Pushes a new frame; returns false (and sends nothing) when the panel is not open. */
    render(content: PanelContent): boolean;
    /** Closes the panel (nothing is sent when it is not open). */
    close(): void;
}
/**
 * A zot extension.
 *
 * ```ts
 * const ext = new Extension("hello", "1.0.0");
 * ext.command("hello", "say hi", async () => prompt("Greet me."));
 * await ext.run();
 * ```
 */
export declare class Extension {
    readonly name: string;
    readonly version: string;
    private readonly input;
    private readonly output;
    private readonly stderr;
    private readonly capabilities;
    private readonly redirectConsole;
    private readonly shutdownGraceMs;
    private readonly commands;
    private readonly tools;
    private readonly events;
    private readonly interceptors;
    private readonly helloHandlers;
    private readonly shutdownHandlers;
    private readonly panels;
    private phase;
    private hostInfo;
    /** Runtime frames written before `ready`, sent right after it. */
    private outbox;
    /** Host frames that arrived before `ready`, handled right after it. */
    private early;
    private subscribedEvents;
    private subscribedIntercepts;
    private eventChain;
    private splitter;
    private finish?;
    private fail?;
    private detach;
    private restoreConsole?;
    constructor(name: string, version?: string, options?: ExtensionOptions);
    /** What the host said in `hello_ack` (empty until then; complete inside `onHello`). */
    get host(): Readonly<HostInfo>;
    /**
     * Runs after `hello_ack`, before registrations are announced: registrations
     * made here (for example depending on `host.cwd`) are sent before `ready`.
     */
    onHello(handler: (host: HostInfo) => Awaitable<void>): this;
    /** Runs when the host asks us to shut down, before `shutdown_ack` (bounded by `shutdownGraceMs`). */
    onShutdown(handler: () => Awaitable<void>): this;
    /**
     * Registers a slash command. The handler gets everything after the name
     * (trimmed) and returns a `Response` (`prompt`, `insert`, `display`,
     * `openPanel`, `noop`, `error`), a string to display, or nothing.
     */
    command(name: string, description: string, handler: CommandHandler): this;
    /**
     * Registers a tool the model can call. `schema` is a JSON Schema object for
     * the arguments. The handler returns a string, content blocks, or a
     * `ToolResult` (`isError`, `activateTools`); a throw becomes an error result.
     */
    tool<A = ToolArgs>(name: string, description: string, schema: JsonSchema, handler: ToolHandler<A>, options?: ToolOptions): this;
    /**
     * Observes a lifecycle event. Handlers of all events run one at a time,
     * in the order the host sent the events.
     */
    on<K extends keyof EventMap>(event: K, handler: EventHandler<EventMap[K]>): this;
    on(event: string, handler: EventHandler<GenericEvent>): this;
    /**
     * Intercepts tool calls before they run: return nothing / `allow()`,
     * `block(reason)` (the model sees `reason`), or `rewrite(args)`. Several
     * interceptors chain: the first block wins, rewrites feed the next one.
     * A throw allows the call (the host's fail-open rule).
     */
    interceptToolCall(handler: ToolCallInterceptor): this;
    /** Intercepts each model call of a turn: nothing / `allow()` or `block(reason)`. */
    interceptTurnStart(handler: TurnStartInterceptor): this;
    /**
     * Intercepts the assistant's final text: nothing / `allow()`,
     * `block(reason)` to hide it, or `replaceText(text)` to change what the user sees.
     */
    interceptAssistantMessage(handler: AssistantMessageInterceptor): this;
    /**
     * Replaces the complete system prompt before the first model call: return
     * the new prompt ("" removes it) or nothing to keep it.
     */
    beforeAgentStart(handler: BeforeAgentStartInterceptor): this;
    /**
     * The panel with this id, created on first use; `handlers` (when given)
     * replace its key and close handlers.
     */
    panel(id: string, handlers?: PanelHandlers): Panel;
    /** Go-SDK style: key and close handlers for a panel id. */
    onPanelKey(panelId: string, onKey: (event: PanelKeyEvent, panel: Panel) => Awaitable<void>, onClose?: (panel: Panel) => Awaitable<void>): this;
    /** A one-shot note in zot (`ext_notify` in RPC mode). */
    notify(level: NotifyLevel, message: string): void;
    /** Removes every note this extension pushed. */
    clearNotes(): void;
    /** Submits `text` as a user prompt in the interactive host (ignored elsewhere). */
    submit(text: string): void;
    /** Pushes a frame for an open panel (`Panel.render` checks that it is open). */
    renderPanel(panelId: string, content: PanelContent): void;
    /** Closes a panel. */
    closePanel(panelId: string): void;
    /** Writes `[name] message` to stderr (the host's log for this extension). */
    log(...args: unknown[]): void;
    /**
     * Speaks the protocol until the host closes stdin or sends `shutdown`:
     * sends `hello`, waits for `hello_ack`, runs `onHello` handlers, announces
     * every registration and one `subscribe`, sends `ready`, then dispatches
     * frames. Resolves when done; rejects only when the host goes away before
     * `hello_ack`.
     */
    run(): Promise<void>;
    /** After `hello_ack`: `onHello`, registrations, `ready`, then the frames that waited. */
    private start;
    private isAnnounced;
    private addInterceptor;
    private announce;
    /** After `ready`, subscribes to kinds that gained their first handler. */
    private resubscribe;
    private sendRegisterCommand;
    private sendRegisterTool;
    /** One-way frames: held back until `ready`, dropped once stopped. */
    private sendRuntime;
    private write;
    private attach;
    /** EOF or a broken pipe: before `hello_ack` that is an error, after it the end. */
    private hostGone;
    /** Ends the run: detaches from the streams and settles `run()`. */
    private stop;
    private handleLine;
    private dispatch;
    /** Runs a handler concurrently with everything else. */
    private track;
    private shutdown;
    private onCommand;
    private onToolCall;
    private onIntercept;
    private interceptTool;
    private interceptTurn;
    private interceptMessage;
    private interceptPrompt;
    private onEvent;
    private onPanelFrame;
}
