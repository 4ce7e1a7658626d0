import { DatabaseWaitBudget } from '../../src/database/database-wait-budget';

describe('DatabaseWaitBudget', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());
  const pass = (ms: number) => jest.advanceTimersByTime(ms);

  it('adds up waits one after another and does not count the time between them', () => {
    const budget = new DatabaseWaitBudget();
    let end = budget.begin();
    pass(300);
    end();
    pass(5000); // not waiting on the database
    expect(budget.remainingMs(1000)).toBeCloseTo(700, 3);
    end = budget.begin();
    pass(400);
    expect(budget.remainingMs(1000)).toBeCloseTo(300, 3); // a wait under way counts as it goes
    end();
    expect(budget.remainingMs(1000)).toBeCloseTo(300, 3);
  });

  it('counts overlapping waits once', () => {
    const budget = new DatabaseWaitBudget();
    const a = budget.begin();
    pass(200);
    const b = budget.begin();
    pass(300);
    a();
    a(); // ending twice changes nothing
    pass(100);
    b();
    expect(budget.remainingMs(1000)).toBeCloseTo(400, 3); // 600 ms of wall time, not 500 + 400
    pass(1000);
    expect(budget.remainingMs(1000)).toBeCloseTo(400, 3);
  });
});
