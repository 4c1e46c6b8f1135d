// Widgets of the dashboard.
import { EventEmitter } from "events";

export interface WidgetOptions {
  title: string;
  refreshMs?: number;
}

export type Listener = (value: number) => void;

export enum State {
  Idle,
  Loading,
  Failed,
}

/** A widget shows one metric and refreshes it on a timer. */
export class Widget extends EventEmitter {
  private state: State = State.Idle;
  private timer?: ReturnType<typeof setInterval>;

  constructor(private readonly options: WidgetOptions) {
    super();
  }

  /** Start refreshing. */
  start(fetch: () => Promise<number>): void {
    this.timer = setInterval(async () => {
      this.state = State.Loading;
      try {
        this.emit("value", await fetch());
        this.state = State.Idle;
      } catch (err) {
        this.state = State.Failed;
      }
    }, this.options.refreshMs ?? 5000);
  }

  stop(): void {
    if (this.timer) {
      clearInterval(this.timer);
    }
  }
}

/** Format a metric for display. */
export function formatValue(value: number, unit = ""): string {
  return `${value.toFixed(1)}${unit}`;
}

export const clamp = (value: number, lo: number, hi: number): number =>
  Math.min(hi, Math.max(lo, value));
