package zlink.executor;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;

/**
 * One accepted work: its place in its queue and, once it ended, its outcome
 * ({@code completed}, {@code failed} or {@code cancelled}, D-11). The fields below the
 * public methods belong to the queue that holds the work and are read and written only
 * under that queue's lock.
 */
public final class ZLinkWorkHandle {
    static final int NEW = -1; // made, not placed in any line yet (a session's final work)
    static final int QUEUED = 0; // waiting in a line, never started
    static final int RUNNING = 1; // holds the turn
    static final int SUSPENDED = 2; // gave the turn back; its external call is pending
    static final int REQUEUED = 3; // its resume permit waits in a line
    static final int DONE = 4;
    static final String[] PHASES = {"queued", "running", "suspended", "requeued", "done"};

    public static final String COMPLETED = "completed";
    public static final String FAILED = "failed";
    public static final String CANCELLED = "cancelled";

    final ZLinkSerialExecutionQueue queue;
    ZLinkWork work;
    private volatile String label = "";

    // ------------------------------------------- the queue's fields (under its lock)
    long wid = -1; // admission sequence number: the work's identity in its queue
    long seq = -1; // sequence number of its current place in line
    int lane;
    boolean barrier;
    long nbytes; // its reservation
    int phase = NEW;
    int resumes;
    boolean zombie;
    boolean started;
    Runnable permit; // set while a resume permit waits in a line
    String awaiting; // what a suspended work waits on, for zombie listings

    // -------------------------------------------- set by coordinators before admission
    /** The turns and claims this work needs, first the queue whose turn it takes; the
     *  reentrancy check (SE-8.2, D-14) compares them. */
    List<Object> gates;
    /** A SpotWide Actor record: it follows the outcome of its execution turn on the Spot
     *  queue, so disposal never cancels it directly and its failure is reported once, by
     *  the turn that ran the code (D-21). */
    boolean quiet;
    /** A SpotWide execution turn: its Actor record counts the work, so scopes skip it. */
    boolean executionTurn;
    /** The Actor record an execution turn belongs to (its label is the record's). */
    ZLinkWorkHandle origin;
    /** An Actor record's execution turn on the Spot queue, once placed. */
    volatile ZLinkWorkHandle executionOnSpot;

    // ------------------------------------------------------------------- outcome
    private final CompletableFuture<ZLinkWorkHandle> done = new CompletableFuture<>();
    private volatile String outcome;
    private volatile Throwable error;

    // -------------------------------------------------------------- cancellation
    private boolean cancelRequested;
    private List<Runnable> cancelListeners;

    ZLinkWorkHandle(ZLinkSerialExecutionQueue queue, ZLinkWork work) {
        this.queue = queue;
        this.work = work;
        this.gates = List.of(queue);
    }

    /** A free-form name for logs, listings and observers. */
    public String label() {
        ZLinkWorkHandle o = origin;
        return o != null ? o.label() : label;
    }

    public void setLabel(String label) {
        this.label = label == null ? "" : label;
    }

    /** The name of the queue that accepted this work. */
    public String queueName() {
        return queue.name();
    }

    /** {@code completed}, {@code failed}, {@code cancelled}, or null while it has not ended. */
    public String outcome() {
        return outcome;
    }

    /** The error a failed work ended with (null otherwise). */
    public Throwable error() {
        return error;
    }

    public boolean isDone() {
        return outcome != null;
    }

    /** Completes (never exceptionally) with this handle once the work has ended. Callbacks
     *  run on the thread that ends the work. */
    public CompletableFuture<ZLinkWorkHandle> whenDone() {
        return done;
    }

    /** End the work with its outcome; false if it had ended already. */
    boolean settle(String outcome, Throwable error) {
        synchronized (this) {
            if (this.outcome != null) return false;
            this.error = FAILED.equals(outcome) ? error : null;
            this.outcome = outcome;
            this.work = null;
        }
        done.complete(this);
        return true;
    }

    /** The outcome as a stage result: normal, a CancellationException or the error. */
    CompletableFuture<Object> asStage() {
        CompletableFuture<Object> out = new CompletableFuture<>();
        done.whenComplete((h, t) -> {
            if (COMPLETED.equals(outcome)) out.complete(null);
            else if (CANCELLED.equals(outcome)) out.completeExceptionally(new CancellationException("cancelled"));
            else out.completeExceptionally(error);
        });
        return out;
    }

    // -------------------------------------------------------------- cancellation
    /** Ask the work to stop at its next await point (disposal, D-17). Listeners run on
     *  the caller's thread, once. */
    void requestCancel() {
        List<Runnable> run;
        synchronized (this) {
            if (cancelRequested) return;
            cancelRequested = true;
            run = cancelListeners;
            cancelListeners = null;
            if (run != null && !run.isEmpty()) cancelDelivered = true;
        }
        if (run != null) for (Runnable r : run) r.run();
    }

    synchronized boolean cancelRequested() {
        return cancelRequested;
    }

    /** Whether the cancellation reached the work: a listener of something it waits on
     *  ran for it (at the request, or registered after it). */
    synchronized boolean cancelDelivered() {
        return cancelDelivered;
    }

    private boolean cancelDelivered;

    /** How many of this work's code parts run now (its start, a continuation): while it
     *  is above zero the work is not waiting, so it cannot be judged a survivor yet. */
    int executing;

    /** Run {@code listener} when cancellation is requested (at once if it was). */
    void onCancel(Runnable listener) {
        synchronized (this) {
            if (!cancelRequested) {
                if (cancelListeners == null) cancelListeners = new ArrayList<>();
                cancelListeners.add(listener);
                return;
            }
            cancelDelivered = true;
        }
        listener.run();
    }

    @Override
    public String toString() {
        String state = outcome != null ? outcome : (phase >= 0 ? PHASES[phase] : "new");
        return "<ZLinkWorkHandle " + queue.name() + "#" + wid + " " + label() + " " + state + ">";
    }
}
