/**
 * Steps that other modules register and a module runs at one of its events, in registration order, each awaited (in
 * the caller's transaction when it runs inside one). How a lower module lets higher ones act on its events without
 * importing them: it declares and exports the hooks, they register in their constructors (docs/architecture.md,
 * "Module layers").
 */
export class Hooks<Args extends unknown[]> {
  private readonly steps: ((...args: Args) => Promise<void> | void)[] = [];

  register(step: (...args: Args) => Promise<void> | void): void {
    this.steps.push(step);
  }

  async run(...args: Args): Promise<void> {
    for (const step of this.steps) await step(...args);
  }
}
