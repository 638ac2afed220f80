CREATE TABLE "logtracker"."tail_tickets" (
	"ticket_hash" text PRIMARY KEY NOT NULL,
	"user_id" integer NOT NULL,
	"session_id" text NOT NULL,
	"project_id" integer NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "logtracker"."tail_tickets" ADD CONSTRAINT "tail_tickets_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "logtracker"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "logtracker"."tail_tickets" ADD CONSTRAINT "tail_tickets_session_id_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "logtracker"."sessions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "logtracker"."tail_tickets" ADD CONSTRAINT "tail_tickets_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "logtracker"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tail_tickets_expires_at_idx" ON "logtracker"."tail_tickets" USING btree ("expires_at");