/** The part of autocannon's API that the bench uses (autocannon ships no types). */
declare module "autocannon" {
  interface AutocannonRequest {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
  }
  interface AutocannonOptions {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    timeout?: number;
    requests?: {
      setupRequest?: (request: AutocannonRequest) => AutocannonRequest;
      onResponse?: (status: number, body: string) => void;
    }[];
  }
  interface AutocannonResult {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    requests: { total: number; average: number };
  }
  interface Instance {
    stop(): void;
    on(event: "response", listener: (client: unknown, status: number, bytes: number, ms: number) => void): Instance;
  }
  function autocannon(
    options: AutocannonOptions,
    done: (error: Error | null, result: AutocannonResult) => void,
  ): Instance;
  export default autocannon;
}
