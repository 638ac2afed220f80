CREATE INDEX "appointments_created_idx" ON "appointments" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "appointments_completed_idx" ON "appointments" USING btree ("completed_at") WHERE "appointments"."completed_at" is not null;--> statement-breakpoint
CREATE INDEX "service_requests_created_idx" ON "service_requests" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "payments_paid_idx" ON "payments" USING btree ("paid_at") WHERE "payments"."paid_at" is not null;--> statement-breakpoint
CREATE INDEX "payments_refunded_idx" ON "payments" USING btree ("refunded_at") WHERE "payments"."refunded_at" is not null;